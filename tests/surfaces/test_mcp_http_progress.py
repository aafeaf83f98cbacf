"""Progress over streamable HTTP: `zarniwoop serve` (uvicorn on loopback) answers a `tools/call` that
carries a progress token as an SSE stream — `notifications/progress` for each step, then the result —
when the client accepts `text/event-stream`, and as one JSON answer when it accepts only JSON.

Three real clients: the mcp SDK's, fastmcp's and langchain-mcp-adapters'. The last one needs mcp 1.x
(it imports `mcp.server.fastmcp`, gone in 2.x), so it cannot share this environment: it runs in its
own virtualenv (`scripts/langchain_mcp_venv.sh` builds one at /opt/langchain-mcp, as `.ci/run` does;
`ZARNIWOOP_LANGCHAIN_PYTHON` names another python) and skips, saying so, without it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ..support.tool_calls import CALLS, served_recorded

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group(__name__)]  # one server for the module

QUESTION = CALLS["research_investigate"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with served_recorded(tmp_path_factory.mktemp("mcp-progress")) as running:
        yield running


def assert_investigate_steps(messages: list[str], structured: dict) -> None:
    """plan → each search n/m → dedup → evaluate (→ insights), as over stdio."""
    searches = structured["searches"]
    assert len(messages) >= 4
    assert [m.split(":")[0] for m in messages] == [
        "plan",
        *["search"] * len(searches),
        "dedup",
        "evaluate",
        "insights",
    ]
    assert messages[0] == f"plan: planned {len(searches)} searches (heuristic)"
    assert [m.split(": ")[1] for m in messages[1 : 1 + len(searches)]] == [
        f"search {n}/{len(searches)}" for n in range(1, len(searches) + 1)
    ]
    assert structured["question"] == QUESTION["question"]


async def test_mcp_sdk_client_hears_each_step_then_the_result(server):
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    headers = {"Authorization": f"Bearer {server.token}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
    ):
        result = await client.call_tool("research_investigate", QUESTION, progress_callback=progress)
        assert not result.is_error
        assert_investigate_steps([m or "" for _, _, m in heard], result.structured_content)
        assert [p for p, _, _ in heard] == list(range(1, len(heard) + 1))
        assert {t for _, t, _ in heard} == {len(heard)}  # every step knows the total; the last reaches it

        rich: list[str | None] = []

        async def modality(done: float, total: float | None, message: str | None) -> None:
            rich.append(message)

        await client.call_tool("research_rich", CALLS["research_rich"], progress_callback=modality)
        assert sorted(rich) == sorted(
            f"modality: {m}: {n} hits via brave"
            for m, n in [("WEB", 3), ("IMAGE", 2), ("VIDEO", 2), ("NEWS", 2)]
        )


async def test_fastmcp_client_hears_each_step_then_the_result(server):
    from fastmcp.client import Client as FastMCPClient
    from fastmcp.client.transports import StreamableHttpTransport

    heard: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append(message or "")

    transport = StreamableHttpTransport(
        f"{server.url}/mcp", headers={"Authorization": f"Bearer {server.token}"}
    )
    async with FastMCPClient(transport) as client:
        result = await client.call_tool("research_investigate", QUESTION, progress_handler=progress)
    assert not result.is_error
    assert_investigate_steps(heard, result.structured_content)


def langchain_python() -> str:
    python = os.environ.get("ZARNIWOOP_LANGCHAIN_PYTHON", "/opt/langchain-mcp/bin/python")
    if not Path(python).exists():
        pytest.skip(
            "langchain-mcp-adapters needs mcp<2 (Zarniwoop needs mcp 2.x): set ZARNIWOOP_LANGCHAIN_PYTHON "
            "to the python of a virtualenv that has it (scripts/langchain_mcp_venv.sh builds /opt/langchain-mcp)"
        )
    return python


LANGCHAIN_CLIENT = """
import asyncio, json, sys
from langchain_mcp_adapters.callbacks import Callbacks
from langchain_mcp_adapters.client import MultiServerMCPClient

url, token, arguments = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
heard = []

async def on_progress(progress, total, message, context):
    heard.append([progress, total, message])

async def main():
    client = MultiServerMCPClient(
        {"zarniwoop": {"url": url, "transport": "streamable_http", "headers": {"Authorization": "Bearer " + token}}},
        callbacks=Callbacks(on_progress=on_progress),
    )
    tools = {t.name: t for t in await client.get_tools()}
    tool = tools["research_investigate"]
    tool.response_format = "content_and_artifact"
    answer = await tool.ainvoke({"type": "tool_call", "id": "call-1", "name": tool.name, "args": arguments})
    print(json.dumps({"tools": sorted(tools), "heard": heard, "artifact": answer.artifact}, default=str))

asyncio.run(main())
"""


def test_langchain_mcp_adapters_hear_each_step_then_the_result(server):
    python = langchain_python()
    done = subprocess.run(
        [python, "-c", LANGCHAIN_CLIENT, f"{server.url}/mcp", server.token, json.dumps(QUESTION)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(answer["tools"]) == 5
    structured = answer["artifact"]["structured_content"]
    assert_investigate_steps([m for _, _, m in answer["heard"]], structured)


async def test_a_json_only_client_gets_the_one_json_answer(server):
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "research_investigate", "arguments": QUESTION, "_meta": {"progressToken": "p1"}},
    }
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.post(
            f"{server.url}/mcp",
            json=call,
            headers={"Authorization": f"Bearer {server.token}", "Accept": "application/json"},
        )
        streamed = await http.post(
            f"{server.url}/mcp",
            json=call,
            headers={
                "Authorization": f"Bearer {server.token}",
                "Accept": "application/json, text/event-stream",
            },
        )
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert body["id"] == 7 and body["result"]["structuredContent"]["question"] == QUESTION["question"]
    # the same call accepting SSE: progress events first, the result last, on one stream
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = [
        json.loads(line[5:])
        for line in streamed.text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]
    progress = [e for e in events if e.get("method") == "notifications/progress"]
    assert len(progress) >= 4 and {e["params"]["progressToken"] for e in progress} == {"p1"}
    last = events[-1]
    assert last["id"] == 7 and last["result"]["content"] == body["result"]["content"]  # the same answer
    assert events.index(progress[-1]) < len(events) - 1

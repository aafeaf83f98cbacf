"""`zarniwoop mcp` answers `initialize` before it opens the runtime (issue 26's start-up budget),
asserted by the order of events, never by a clock (the time itself: `bench/mcp_startup.py`):

- what the command imports before it can answer — the CLI and `surfaces.mcp` — holds none of the
  runtime, the tools, the dispatcher or the HTTP client;
- after the `initialize` answer, and before the host sends anything else, `ZARNIWOOP_HOME` is still
  untouched (no database opened); the next message opens it and `tools/list` then has the five tools;
- a runtime that cannot open (an unknown `--profile`) after `initialize` ends the command with exit 2
  and the one error line, though the host keeps stdin open.
"""

from __future__ import annotations

import json
import subprocess
import sys

from ..support.mcp_stdio import INITIALIZE, INITIALIZED, TOOLS_LIST
from ..support.runtime import write_config
from ..support.served import serve_command, server_env
from ..support.tool_calls import mount_recorded

DEFERRED = ("zarniwoop.runtime", "zarniwoop.tools", "zarniwoop.dispatch", "zarniwoop.storage", "aiohttp")


def test_what_initialize_needs_imports_no_runtime_tools_or_http_client():
    probe = (
        "import sys; import zarniwoop.surfaces.cli, zarniwoop.surfaces.cli.mcp_cmd, zarniwoop.surfaces.mcp; "
        "import mcp.server.mcpserver, mcp.server.stdio; "
        f"print(sorted(m for m in sys.modules if m.startswith({DEFERRED!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def start(tmp_path, emulator, *args: str) -> tuple[subprocess.Popen[str], object]:
    config = write_config(tmp_path, {"settings": mount_recorded(emulator)})
    home = tmp_path / "home"
    process = subprocess.Popen(
        serve_command("--config", str(config), "mcp", *args),
        env=server_env(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, home


def send(process: subprocess.Popen[str], *messages: dict) -> None:
    assert process.stdin is not None
    process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    process.stdin.flush()


def answer(process: subprocess.Popen[str]) -> dict:
    assert process.stdout is not None
    return json.loads(process.stdout.readline())


def test_initialize_is_answered_before_the_runtime_opens(tmp_path, emulator):
    process, home = start(tmp_path, emulator)
    try:
        send(process, INITIALIZE)
        initialized = answer(process)
        assert initialized["id"] == 1
        assert initialized["result"]["serverInfo"]["name"] == "zarniwoop"
        assert initialized["result"]["capabilities"]["tools"] is not None
        assert not home.exists() or not any(home.iterdir())  # no database, no spool yet
        send(process, INITIALIZED, TOOLS_LIST)
        listed = answer(process)
        assert listed["id"] == 2
        assert sorted(t["name"] for t in listed["result"]["tools"]) == sorted(
            [
                "research_search",
                "research_search_expert",
                "research_rich",
                "research_investigate",
                "research_providers",
            ]
        )
        assert any(home.iterdir())  # the runtime is open now
    finally:
        assert process.stdin is not None
        process.stdin.close()
        assert process.wait(timeout=30) == 0


def test_a_runtime_that_cannot_open_after_initialize_ends_the_command_with_exit_2(tmp_path, emulator):
    process, _ = start(tmp_path, emulator, "--profile", "nobody")
    try:
        send(process, INITIALIZE)
        assert answer(process)["id"] == 1
        send(process, INITIALIZED, TOOLS_LIST)  # stdin stays open: the host waits for its tools
        assert process.wait(timeout=60) == 2
        assert process.stderr is not None
        assert process.stderr.read().strip().splitlines()[-1] == (
            "error: profile: unknown profile 'nobody'; defined here: none"
        )
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

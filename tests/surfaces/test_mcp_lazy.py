"""The HTTP app builds its MCP server at the first `/mcp` request, not at start-up: the SDK's import
was 0.45 of the 1.3 s of CPU a `zarniwoop serve` took to start and stop (0.83 s without it)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from zarniwoop.surfaces.http.allowed_hosts import host_check
from zarniwoop.surfaces.http.mcp_endpoint import LazyMCP
from zarniwoop.tools.registry import Toolbox

from ..support.paths import REPO_ROOT
from ..support.runtime import endpoint, only, open_runtime, write_config

pytestmark = pytest.mark.anyio

TOKEN = "zw_lazy_mcp_admin_token_0123456789"

_APP = """
import json, sys
from pathlib import Path
from fastapi.testclient import TestClient
from zarniwoop.surfaces.http.app import create_app

tmp = Path(sys.argv[1])
app = create_app(config=tmp / "zarniwoop.yaml", home=tmp / "home", admin_token=sys.argv[2])
headers = {"Authorization": f"Bearer {sys.argv[2]}", "Accept": "application/json"}
seen = {}
with TestClient(app, base_url="http://127.0.0.1:8000") as client:
    seen["providers"] = client.get("/v1/research/providers", headers=headers).status_code
    seen["mcp loaded after an API call"] = "mcp" in sys.modules
    listed = client.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    seen["tools/list"] = listed.status_code
    seen["tools"] = sorted(t["name"] for t in listed.json()["result"]["tools"])
    seen["mcp loaded after /mcp"] = "mcp" in sys.modules
print(json.dumps(seen))
"""


def test_the_mcp_sdk_loads_at_the_first_mcp_request_and_then_answers(tmp_path):
    write_config(tmp_path, {"settings": {**only(), **endpoint("wiki", "wikipedia", "http://127.0.0.1:9/w")}})
    done = subprocess.run(
        [sys.executable, "-c", _APP, str(tmp_path), TOKEN],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr  # the lifespan's exit stopped the session managers
    assert json.loads(done.stdout) == {
        "providers": 200,
        "mcp loaded after an API call": False,
        "tools/list": 200,
        "tools": [
            "research_investigate",
            "research_providers",
            "research_rich",
            "research_search",
            "research_search_expert",
        ],
        "mcp loaded after /mcp": True,
    }


async def test_requests_arriving_together_share_one_start_and_a_cancelled_one_does_not_stop_it(tmp_path):
    async with await open_runtime(tmp_path, only()) as rt:
        lazy = LazyMCP(Toolbox(rt), host_check("127.0.0.1", None, []))
        first = asyncio.create_task(lazy.transports())
        cancelled = asyncio.create_task(lazy.transports())
        await asyncio.sleep(0)  # both are waiting for the one start
        cancelled.cancel()
        transports = await first
        assert await lazy.transports() is transports
        assert cancelled.cancelled()
        running = [t for t in asyncio.all_tasks() if t.get_name() == "zarniwoop-mcp-sessions"]
        assert len(running) == 1 and not running[0].done()
        await lazy.aclose()
        assert running[0].done() and running[0].exception() is None

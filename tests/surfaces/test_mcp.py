"""MCP with the SDK's own client: in process, over stdio (`zarniwoop mcp`), over streamable HTTP (`serve`)."""

from __future__ import annotations

import sys

import httpx
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from zarniwoop.surfaces.mcp import build_mcp_server, fixed_principal
from zarniwoop.tenancy.tokens import Principal
from zarniwoop.tools import TOOL_NAMES, TOOLS, Toolbox

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, open_runtime, write_config
from ..support.served import served, server_env

pytestmark = pytest.mark.anyio
WIKI = "/w/w/rest.php/v1/search/page"
HITS = ("Aurora", "Aurora borealis", "Aurora australis")


def wiki_settings(emulator):
    return {
        **only(),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/w"),
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.encyclopedia": 0,
        "research.provenance": True,
    }


QUIET_PROJECT = {"acme": {"projects": {"quiet": {"settings": {"research.provenance": False}}}}}


async def assert_five_tools_and_search(client: Client, emulator) -> None:
    listed = (await client.list_tools()).tools
    assert [t.name for t in listed] == list(TOOL_NAMES)
    for tool, spec in zip(listed, TOOLS, strict=True):
        assert tool.input_schema == spec.input_schema  # the one schema, as published everywhere
        assert tool.description == spec.description
    result = await client.call_tool("research_search", {"query": "aurora", "modality": "encyclopedia"})
    assert not result.is_error
    assert [h["title"] for h in result.structured_content["hits"]] == list(HITS)
    assert result.structured_content["providerInstanceId"] == "wiki"
    text = result.content[0].text
    assert text.startswith("[1] Aurora\n")
    assert "[3] Aurora australis" in text
    assert text.endswith("(via wiki)")
    assert emulator.requests(WIKI)[-1].param("q") == "aurora"


async def test_in_process_client_tools_and_errors(tmp_path, emulator):
    emulator.add(WIKI, Reply.json(wikipedia_pages(*HITS)))
    async with await open_runtime(tmp_path, wiki_settings(emulator)) as rt:
        server = build_mcp_server(Toolbox(rt), fixed_principal(Principal("default", "default", "user")))
        async with Client(server) as client:
            await assert_five_tools_and_search(client, emulator)
            # bad arguments are JSON-RPC -32602 naming the field (MCP spec); tests/surfaces/test_mcp_protocol.py
            for arguments, message in [
                (
                    {"query": "aurora", "modality": "smells"},
                    "modality: expected one of WEB, IMAGE, VIDEO, PDF, NEWS, ACADEMIC, ENCYCLOPEDIA, BOOK, MAP, "
                    "CODE, INTERNAL_DOC, RAG, got 'SMELLS'",
                ),
                (
                    {"query": "x" * 1_048_576, "modality": "web"},
                    "query: must be at most 2000 characters, got 1048576",
                ),
            ]:
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("research_search", arguments)
                assert (refused.value.error.code, refused.value.error.message) == (-32602, message)
            investigate = await client.call_tool(
                "research_investigate", {"question": "aurora", "maxResults": 3}
            )
            assert not investigate.is_error
            assert investigate.structured_content["question"] == "aurora"
            assert investigate.content[0].text.startswith("[1] Aurora\n")
            providers = await client.call_tool("research_providers", {})
            assert "lastError" not in providers.structured_content["providers"][0]  # a user principal


async def test_stdio_subprocess_lists_five_tools_and_searches(tmp_path, emulator):
    emulator.add(WIKI, Reply.json(wikipedia_pages(*HITS)))
    config = write_config(tmp_path, {"settings": wiki_settings(emulator)})
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "zarniwoop", "--config", str(config), "mcp"],
        env=server_env(tmp_path / "home"),
    )
    async with Client(params, read_timeout_seconds=30) as client:
        await assert_five_tools_and_search(client, emulator)
        providers = await client.call_tool("research_providers", {})
        wiki = next(e for e in providers.structured_content["providers"] if e["id"] == "wiki")
        assert wiki["reachable"] is True and "lastError" not in wiki  # compact: no null lastError


async def test_streamable_http_on_real_uvicorn_with_the_printed_token(tmp_path, emulator):
    emulator.add(WIKI, Reply.json(wikipedia_pages(*HITS)))
    config = write_config(tmp_path, {"settings": wiki_settings(emulator), "tenants": QUIET_PROJECT})
    with served(config, tmp_path / "home") as server:
        assert server.token is not None  # no tokens configured: the banner printed an admin token
        async with httpx.AsyncClient(timeout=60) as http:
            denied = await http.post(
                f"{server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            )
            assert denied.status_code == 401
        headers = {"Authorization": f"Bearer {server.token}"}
        async with (
            httpx.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
        ):
            await assert_five_tools_and_search(client, emulator)
        # `?tenant=&project=` picks the scope the calls act in: acme/quiet has no provenance footer
        async with (
            httpx.AsyncClient(headers=headers, timeout=30) as http,
            Client(
                streamable_http_client(f"{server.url}/mcp?tenant=acme&project=quiet", http_client=http)
            ) as client,
        ):
            quiet = await client.call_tool("research_search", {"query": "aurora", "modality": "encyclopedia"})
            assert quiet.content[0].text.startswith("[1] Aurora\n")
            assert "(via" not in quiet.content[0].text

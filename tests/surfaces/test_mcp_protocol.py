"""MCP per the spec: -32602 naming the field, only tools advertised, one log line for a bad request,
`notifications/progress` for long tools, `null` for every optional argument, structured content
that validates against each tool's `outputSchema` — in process and over streamable HTTP.
"""

from __future__ import annotations

import logging

import httpx
import jsonschema
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from zarniwoop.surfaces.mcp import build_mcp_server, fixed_principal
from zarniwoop.tenancy.tokens import Principal
from zarniwoop.tools import TOOL_NAMES, Toolbox, tool_spec

from ..support.runtime import open_runtime, write_config
from ..support.served import served
from ..support.tool_calls import CALLS, FILTERED_EXPERT, mount_recorded, with_nulls

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(tmp_path, emulator):
    async with await open_runtime(tmp_path, mount_recorded(emulator)) as rt:
        server = build_mcp_server(Toolbox(rt), fixed_principal(Principal("default", "default", "admin")))
        async with Client(server) as connected:
            yield connected


async def refused(call) -> tuple[int, str, object]:
    with pytest.raises(MCPError) as caught:
        await call
    return caught.value.error.code, caught.value.error.message, caught.value.error.data


async def test_only_tools_are_advertised_and_unserved_methods_are_method_not_found(client, caplog):
    capabilities = client.server_capabilities
    assert capabilities.tools is not None
    assert (capabilities.prompts, capabilities.resources, capabilities.logging) == (None, None, None)
    caplog.set_level(logging.DEBUG)
    assert (await refused(client.get_prompt("summarise")))[:2] == (-32601, "Method not found")
    assert (await refused(client.list_resources()))[0] == -32601
    assert not [r for r in caplog.records if r.exc_info]  # no traceback


async def test_unknown_tool_and_bad_arguments_are_invalid_params_naming_the_field(client, caplog):
    caplog.set_level(logging.INFO)
    code, message, data = await refused(client.call_tool("research_serch", {"query": "x"}))
    assert code == -32602
    assert message == (
        "name: unknown tool 'research_serch'; expected one of research_search, research_search_expert, "
        "research_rich, research_investigate, research_providers"
    )
    assert data == {"field": "name"}
    assert await refused(client.call_tool("research_search", {"query": "x"})) == (
        -32602,
        "modality: is required",
        {"field": "modality"},
    )
    assert await refused(
        client.call_tool("research_search", {"query": "x", "modality": "web", "limit": 3})
    ) == (
        -32602,
        "limit: unknown parameter; expected one of query, modality, maxResults, locale, profile, "
        "includeDomains, excludeDomains, timeRange, safeSearch, region, page, strictFilters",
        {"field": "limit"},
    )
    ours = [r for r in caplog.records if r.name == "zarniwoop.surfaces.mcp"]
    assert [r.getMessage() for r in ours] == [
        "MCP request refused: invalid name",
        "MCP request refused: invalid modality",
        "MCP request refused: invalid limit",
    ]
    assert not [r for r in caplog.records if r.exc_info]


async def test_investigate_reports_each_step_to_a_progress_token(client):
    steps: list[tuple[float, float | None, str | None]] = []

    async def heard(progress: float, total: float | None, message: str | None) -> None:
        steps.append((progress, total, message))

    result = await client.call_tool(
        "research_investigate", CALLS["research_investigate"], progress_callback=heard
    )
    assert not result.is_error
    assert len(steps) >= 4
    names = [message.split(":")[0] for _, _, message in steps]
    searches = result.structured_content["searches"]
    assert names == ["plan", *["search"] * len(searches), "dedup", "evaluate", "insights"]
    assert steps[0][2] == f"plan: planned {len(searches)} searches (heuristic)"
    assert [p for p, _, _ in steps] == list(range(1, len(steps) + 1))  # progress only grows
    assert steps[-1][0] == steps[-1][1]  # and ends at the total
    assert steps[1][2].startswith(f"search: search 1/{len(searches)}: ")


async def test_rich_reports_each_modality(client):
    steps: list[str | None] = []

    async def heard(progress: float, total: float | None, message: str | None) -> None:
        steps.append(message)

    await client.call_tool("research_rich", CALLS["research_rich"], progress_callback=heard)
    assert sorted(steps) == sorted(
        f"modality: {m}: {n} hits via brave" for m, n in [("WEB", 3), ("IMAGE", 2), ("VIDEO", 2), ("NEWS", 2)]
    )


async def test_no_progress_notifications_without_a_token(client):
    result = await client.call_tool("research_investigate", CALLS["research_investigate"])
    assert not result.is_error  # (the SDK sends no token unless a callback is given)


@pytest.mark.parametrize("name", TOOL_NAMES)
async def test_null_for_every_optional_argument_succeeds_and_output_validates(client, name):
    listed = {t.name: t for t in (await client.list_tools()).tools}
    assert listed[name].output_schema == tool_spec(name).output_schema
    result = await client.call_tool(name, with_nulls(name, listed[name].input_schema))
    assert not result.is_error, result.content[0].text
    jsonschema.validate(result.structured_content, listed[name].output_schema)


async def test_over_streamable_http_nulls_succeed_and_a_bad_request_logs_one_line(tmp_path, emulator):
    config = write_config(tmp_path, {"settings": mount_recorded(emulator)})
    with served(config, tmp_path / "home", "--log-level", "info") as server:
        headers = {"Authorization": f"Bearer {server.token}"}
        async with (
            httpx.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as remote,
        ):
            for tool in (await remote.list_tools()).tools:
                result = await remote.call_tool(tool.name, with_nulls(tool.name, tool.input_schema))
                assert not result.is_error, (tool.name, result.content[0].text)
                jsonschema.validate(result.structured_content, tool.output_schema)
            assert (await refused(remote.call_tool("nope", {})))[0] == -32602
            assert (await refused(remote.get_prompt("nope")))[0] == -32601
        log = (tmp_path / "home" / "serve.stderr").read_text()
    assert "Traceback" not in log
    assert log.count("MCP request refused: invalid name") == 1


async def test_expert_search_with_filters_reaches_the_wire_and_pages_on(client, emulator):
    """Issue 47 through the MCP SDK's client: the filters reach Brave's wire, no hit from an excluded
    domain comes back, and the result's `nextPage` given as `page` asks Brave for its next page."""
    listed = {t.name: t for t in (await client.list_tools()).tools}
    first = await client.call_tool("research_search_expert", FILTERED_EXPERT)
    assert not first.is_error, first.content[0].text
    jsonschema.validate(first.structured_content, listed["research_search_expert"].output_schema)
    [sent] = emulator.requests("/brave/res/v1/web/search")
    assert sent.param("q") == "semantic kernel -site:github.com"
    assert (sent.param("freshness"), sent.param("safesearch"), sent.param("country")) == (
        "py",
        "strict",
        "us",
    )
    hits = first.structured_content["hits"]
    assert hits and not [h for h in hits if "github.com" in h["url"]]
    cursor = first.structured_content["nextPage"]
    second = await client.call_tool("research_search_expert", {**FILTERED_EXPERT, "page": cursor})
    assert not second.is_error, second.content[0].text
    assert [r.param("offset") for r in emulator.requests("/brave/res/v1/web/search")] == [None, "1"]
    foreign = await refused(
        client.call_tool("research_search_expert", {**CALLS["research_search_expert"], "page": cursor})
    )
    assert foreign[0] == -32602 and foreign[1].startswith("page: this cursor belongs to another search")

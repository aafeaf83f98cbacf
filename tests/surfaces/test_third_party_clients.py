"""Real third-party MCP clients against `zarniwoop serve`'s `/mcp`, as a new user plugs them in.

- The OpenAI Agents SDK with `convert_schemas_to_strict=True` (what `Agent(mcp_config=…)` does for
  strict models): every tool converts to a strict schema (no fallback to non-strict), and each tool
  answers a call with only its required arguments, and one with `null` for every optional one (what a
  strict model sends).
- pydantic-ai (`MCPToolset` over FastMCP's client) with a scripted model: all five tools offered,
  each called with its required arguments only, structured content returned.
- smolagents (`ToolCollection.from_mcp`, via mcpadapt): all five tools load — none refused for an
  optional argument that is not nullable — and each answers a call with its required arguments only.
  mcpadapt 0.1.x does not import with mcp 2.x, which Zarniwoop needs: this one skips, saying so.

Each test skips, naming the package, where that client is not installed (the `test` extra has the
Agents SDK and pydantic-ai).
"""

from __future__ import annotations

import json

import pytest

from ..support.tool_calls import FILTERED_EXPERT, REQUIRED_ONLY, served_recorded, with_nulls

# one server for the module (set up once): its tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)

FIVE = set(REQUIRED_ONLY)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with served_recorded(tmp_path_factory.mktemp("third-party")) as running:
        yield running


@pytest.mark.anyio
async def test_openai_agents_sdk_strict_lists_and_calls_all_five(server):
    agents = pytest.importorskip("agents", reason="openai-agents is not installed")
    from agents.mcp import MCPServerStreamableHttp, MCPUtil

    mcp = MCPServerStreamableHttp(
        {"url": f"{server.url}/mcp", "headers": {"Authorization": f"Bearer {server.token}"}},
        client_session_timeout_seconds=30,
    )
    agent = agents.Agent(name="researcher", instructions="Research.")
    async with mcp:
        listed = await mcp.list_tools()
        tools = [
            MCPUtil.to_function_tool(t, mcp, convert_schemas_to_strict=True, agent=agent) for t in listed
        ]
        assert {t.name for t in tools} == FIVE
        context = agents.RunContextWrapper(context=None)
        for tool in tools:
            assert tool.strict_json_schema is True, tool.name  # the strict conversion succeeded
            schema = tool.params_json_schema
            assert (
                schema["required"] == list(schema["properties"]) and schema["additionalProperties"] is False
            )
            calls = [REQUIRED_ONLY[tool.name], with_nulls(tool.name, schema)]
            if tool.name == "research_search_expert":  # issue 47's filters, as a strict model sends them
                calls.append({**with_nulls(tool.name, schema), **FILTERED_EXPERT})
            for arguments in calls:
                answer = await tool.on_invoke_tool(
                    _tool_context(agents, context, tool.name, arguments), json.dumps(arguments)
                )
                text = answer if isinstance(answer, str) else json.dumps(answer, default=str)
                assert "Error" not in text[:200], (tool.name, arguments, text[:300])
                assert text, tool.name


def _tool_context(agents, context, name: str, arguments: dict) -> object:
    from agents.tool_context import ToolContext

    return ToolContext(
        context=context.context,
        tool_name=name,
        tool_call_id=f"call-{name}",
        tool_arguments=json.dumps(arguments),
    )


@pytest.mark.anyio
async def test_pydantic_ai_agent_lists_all_five_and_calls_each_with_required_arguments(server):
    pytest.importorskip("pydantic_ai.mcp", reason="pydantic-ai-slim[mcp] is not installed")
    from fastmcp.client import Client
    from fastmcp.client.transports import StreamableHttpTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    offered: dict[str, dict] = {}

    def model(messages, info):  # a scripted model: call every tool once, then answer
        if len(messages) == 1:
            offered.update({t.name: t.parameters_json_schema for t in info.function_tools})
            return ModelResponse(parts=[ToolCallPart(name, args) for name, args in REQUIRED_ONLY.items()])
        return ModelResponse(parts=[TextPart("done")])

    transport = StreamableHttpTransport(
        f"{server.url}/mcp", headers={"Authorization": f"Bearer {server.token}"}
    )
    agent = Agent(FunctionModel(model), toolsets=[MCPToolset(Client(transport), tool_error_behavior="error")])
    result = await agent.run("What is Semantic Kernel?")
    assert result.output == "done"
    assert set(offered) == FIVE
    returns = {
        p.tool_name: p.content
        for m in result.all_messages()
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    }
    assert set(returns) == FIVE
    assert returns["research_search"]["providerInstanceId"] == "brave"  # the structured content, compact
    assert "returnedCount" not in returns["research_search"]


def test_smolagents_loads_all_five_and_calls_each_with_required_arguments(server):
    smolagents = pytest.importorskip("smolagents", reason="smolagents is not installed")
    # mcpadapt 0.1.x (smolagents' MCP bridge) imports `streamablehttp_client`, which mcp 2.x renamed
    pytest.importorskip(
        "mcpadapt.core", reason="mcpadapt is not installed or needs mcp 1.x", exc_type=ImportError
    )
    params = {
        "url": f"{server.url}/mcp",
        "transport": "streamable-http",
        "headers": {"Authorization": f"Bearer {server.token}"},
    }
    with smolagents.ToolCollection.from_mcp(
        params, trust_remote_code=True, structured_output=True
    ) as collection:
        tools = {tool.name: tool for tool in collection.tools}
        assert set(tools) == FIVE
        for name, tool in tools.items():
            optional = [k for k, v in tool.inputs.items() if v.get("nullable")]
            schema_optional = set(
                with_nulls(name, {"properties": tool.inputs, "required": list(REQUIRED_ONLY[name])})
            )
            assert set(optional) == schema_optional - set(REQUIRED_ONLY[name]), name
            answer = tool(**REQUIRED_ONLY[name])
            assert answer, name
            assert "Error" not in str(answer)[:200], (name, str(answer)[:300])

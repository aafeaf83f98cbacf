"""`GET /v1/tools` (the schemas) and `POST /v1/tools/{name}` (call one by name, as a model would).

`GET /v1/tools?dialect=openai|anthropic|gemini` gives the definitions in that API's own shape
(`tools.dialects`); the default, `mcp`, is the canonical one with `outputSchema` and `annotations`.

The call answers `{"name", "isError", "text", "structured"}` — MCP's `CallToolResult` in JSON —
so an agent loop can hand `text` to its model whatever the tool. Bad arguments are a 422 naming
the field, an unknown tool a 404 listing the known ones.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException, Query

from ....tools.dialects import Dialect, tools_document
from ....tools.registry import TOOL_NAMES
from ..deps import Caller, Ctx
from ..errors import ERROR_RESPONSES

router = APIRouter(prefix="/v1/tools", tags=["tools"], responses=ERROR_RESPONSES)


@router.get("", summary="The five tools with their JSON schemas, in one function-calling API's shape")
async def list_tools(
    ctx: Ctx,
    caller: Caller,
    dialect: Annotated[
        Dialect,
        Query(description="Whose tool format: MCP tools/list, OpenAI (strict), Anthropic or Gemini."),
    ] = "mcp",
) -> dict[str, Any]:
    return tools_document(dialect, ctx.toolbox.specs)


@router.post("/{name}", summary="Call a tool by name with a JSON object of arguments")
async def call_tool(
    name: str,
    ctx: Ctx,
    caller: Caller,
    arguments: Annotated[dict[str, Any] | None, Body(description="The tool's arguments.")] = None,
) -> dict[str, Any]:
    if name not in TOOL_NAMES:
        raise HTTPException(404, f"unknown tool {name!r}; expected one of {', '.join(TOOL_NAMES)}")
    result = await ctx.toolbox.execute(name, arguments or {}, caller.scope, admin=caller.admin)
    return result.to_json()

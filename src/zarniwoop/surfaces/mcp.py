"""The MCP server, on the official SDK (`mcp` 2.x `MCPServer`): the five tools, over stdio or HTTP.

`zarniwoop mcp` serves it on stdio for an MCP host (Claude Desktop, an IDE, …); `zarniwoop serve`
mounts its streamable-HTTP transport at `/mcp`, behind the same bearer tokens as the HTTP API.

The tools are registered with the schemas of `zarniwoop.tools` as they are (not re-derived from a
function signature), and their arguments reach `Toolbox.execute` untouched, so MCP validates and
words errors exactly like HTTP and the Python API. Bad arguments raise
`ToolError` (the host gets `isError` with a message naming the field); every result carries the
text rendering and the structured JSON.

    server = build_mcp_server(Toolbox(runtime), fixed_principal(Principal("acme", "review", "admin")))
    await server.run_stdio_async()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict

from .. import __version__
from ..contract.errors import ZarniwoopError

if TYPE_CHECKING:
    from ..tenancy.tokens import Principal
    from ..tools.base import ToolSpec
    from ..tools.registry import Toolbox

PRINCIPAL_KEY = "zarniwoop.principal"
"""Where the HTTP surface leaves the authenticated `Principal` in the ASGI scope of an MCP request."""

INSTRUCTIONS = (
    "Zarniwoop searches many providers behind one cascade: web, academic papers, encyclopedias, news, "
    "images, videos, books. Start with research_search (pick a modality); narrow down with "
    "research_search_expert; use research_rich for a cross-media overview and research_investigate for "
    "questions that need many sources weighed; research_providers shows what is available. Every "
    "answer lists numbered hits with URLs."
)

PrincipalResolver = Callable[[Context[Any, Any]], "Principal"]


class _RawArguments(ArgModelBase):
    """Hands the caller's arguments through unvalidated: `Toolbox.execute` validates them itself."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


def fixed_principal(principal: Principal) -> PrincipalResolver:
    """Every call acts as `principal` (stdio: the local user of the command)."""
    return lambda ctx: principal


def http_principal(ctx: Context[Any, Any]) -> Principal:
    """The principal the HTTP surface authenticated for this request."""
    request = ctx.request_context.request
    # The ASGI scope is untyped; the HTTP surface's auth put a `Principal` under PRINCIPAL_KEY.
    principal: Principal | None = (
        getattr(request, "scope", {}).get(PRINCIPAL_KEY) if request is not None else None
    )
    if principal is None:
        raise ToolError("not authenticated: send Authorization: Bearer <token>")
    return principal


def build_mcp_server(toolbox: Toolbox, principal_of: PrincipalResolver) -> MCPServer[Any]:
    tools = [_tool(spec, toolbox, principal_of) for spec in toolbox.specs]
    # log_level: the SDK configures the root logger when nothing did; keep it quiet (stdio shares the terminal).
    return MCPServer(
        name="zarniwoop", instructions=INSTRUCTIONS, version=__version__, tools=tools, log_level="WARNING"
    )


def _tool(spec: ToolSpec[Any], toolbox: Toolbox, principal_of: PrincipalResolver) -> Tool:
    async def call(arguments: dict[str, Any], ctx: Context[Any, Any]) -> CallToolResult:
        principal = principal_of(ctx)
        try:
            result = await toolbox.execute(spec.name, arguments, principal.scope_for(), admin=principal.admin)
        except ZarniwoopError as exc:  # bad arguments: the model reads which field and why
            raise ToolError(exc.message) from None
        return CallToolResult(
            content=[TextContent(type="text", text=result.text)],
            structured_content=dict(result.structured),
            is_error=result.is_error,
        )

    return Tool(
        fn=call,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        parameters=spec.input_schema,
        fn_metadata=FuncMetadata(arg_model=_RawArguments),
        is_async=True,
        context_kwarg="ctx",
        annotations=ToolAnnotations(
            title=spec.title, read_only_hint=True, destructive_hint=False, open_world_hint=True
        ),
    )


__all__ = ["PRINCIPAL_KEY", "build_mcp_server", "fixed_principal", "http_principal"]

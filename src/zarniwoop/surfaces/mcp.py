"""The MCP server, on the official SDK (`mcp` 2.x `MCPServer`): the five tools, over stdio or HTTP.

`zarniwoop mcp` serves it on stdio for an MCP host (Claude Desktop, an IDE, …); `zarniwoop serve`
mounts its streamable-HTTP transport at `/mcp`, behind the same bearer tokens as the HTTP API.

The tools are registered with the schemas of `zarniwoop.tools` as they are (not re-derived from a
function signature) — `inputSchema`, `outputSchema`, `annotations` — and their arguments reach
`Toolbox.execute` untouched, so MCP validates and words errors exactly like HTTP and the Python API.
Per the MCP spec an unknown tool or bad arguments are a JSON-RPC error `-32602` (Invalid params)
whose message names the field (`data.field` too), logged as one line; every result carries the text
rendering and the compact structured JSON, which validates against the tool's `outputSchema`.
A caller that sends a `progressToken` hears `notifications/progress` for each step of
`research_investigate` and `research_rich`.

Only what is served is advertised: tools. The SDK's server registers prompt and resource handlers
of its own; they are removed (`prompts/get` is then `-32601` Method not found, not a traceback).

    server = build_mcp_server(Toolbox(runtime), fixed_principal(Principal("acme", "review", "admin")))
    await server.run_stdio_async()

`zarniwoop mcp` must answer `initialize` quickly (a host gives up after some seconds; most of them
went on importing the SDK): it serves `build_late_mcp_server(tools)` at once, which answers
`initialize` itself and hands `tools/list` and `tools/call` to the server of `build_mcp_server`
once `tools` — a future the command fills after opening the runtime — is done. This module imports
only the SDK and the contract at import time; the tools and the dispatcher come with the toolbox.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import INVALID_PARAMS, CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from mcp_types import Tool as MCPTool
from pydantic import ConfigDict

from .. import __version__
from ..contract.errors import InvalidRequestError, ZarniwoopError

if TYPE_CHECKING:
    from ..contract.progress import ProgressStep
    from ..tasks.runner import TaskRunner
    from ..tenancy.tokens import Principal
    from ..tools.base import ToolSpec
    from ..tools.registry import Toolbox

log = logging.getLogger(__name__)
UNSERVED_METHODS = (
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
)
"""Handlers the SDK's `MCPServer` registers although Zarniwoop has no prompts or resources."""

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
ProfileResolver = Callable[[Context[Any, Any]], "str | None"]
"""The connection's agent profile (`/mcp?profile=`, `zarniwoop mcp --profile`), or None."""
PROFILE_KEY = "zarniwoop.profile"
"""Where the HTTP surface leaves `/mcp?profile=` in the ASGI scope of an MCP request."""


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
    return request_principal(ctx.request_context.request)[0]


def request_principal(request: Any) -> tuple[Principal, str | None]:
    """The principal the HTTP surface authenticated for an HTTP request, and its `/mcp?profile=`."""
    # The ASGI scope is untyped; the HTTP surface's auth put a `Principal` under PRINCIPAL_KEY.
    scope = getattr(request, "scope", {}) if request is not None else {}
    principal: Principal | None = scope.get(PRINCIPAL_KEY)
    if principal is None:
        raise ToolError("not authenticated: send Authorization: Bearer <token>")
    profile = scope.get(PROFILE_KEY)
    return principal, profile if isinstance(profile, str) else None


def fixed_profile(name: str | None) -> ProfileResolver:
    """Every call routes through `name` unless its tool argument says otherwise (stdio's `--profile`)."""
    return lambda ctx: name


def http_profile(ctx: Context[Any, Any]) -> str | None:
    """The `/mcp?profile=` of the connection this request came in on."""
    request = ctx.request_context.request
    profile = getattr(request, "scope", {}).get(PROFILE_KEY) if request is not None else None
    return profile if isinstance(profile, str) else None


class _ZarniwoopMCPServer(MCPServer[Any]):
    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        from ..tools.registry import TOOL_NAMES

        if name not in TOOL_NAMES:  # the SDK would answer a tool result; the spec says -32602
            raise invalid_params(
                InvalidRequestError(
                    "name", f"unknown tool {name[:100]!r}; expected one of {', '.join(TOOL_NAMES)}"
                )
            )
        return await super().call_tool(name, arguments, context)


def invalid_params(exc: InvalidRequestError) -> MCPError:
    """JSON-RPC `-32602` naming the field; logged as one line with the field only (never the value)."""
    log.warning("MCP request refused: invalid %s", exc.field)
    return MCPError(code=INVALID_PARAMS, message=exc.message, data={"field": exc.field})


class _LateToolsServer(MCPServer[Any]):
    """Answers `initialize` (and `ping`) on its own; tools come from the server `tools` resolves to."""

    def __init__(self, tools: asyncio.Future[MCPServer[Any]], **options: Any) -> None:
        super().__init__(**options)
        self.tools = tools

    async def list_tools(self) -> list[MCPTool]:
        return await (await asyncio.shield(self.tools)).list_tools()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        return await (await asyncio.shield(self.tools)).call_tool(name, arguments, context)


def build_mcp_server(
    toolbox: Toolbox,
    principal_of: PrincipalResolver,
    profile_of: ProfileResolver | None = None,
    *,
    tasks: TaskRunner | None = None,
) -> MCPServer[Any]:
    """`tasks`: the long tools may answer with a task handle (`mcp_tasks.py`, HTTP only: the
    principal comes from the request)."""
    profile_of = profile_of or fixed_profile(None)
    tools = [_tool(spec, toolbox, principal_of, profile_of) for spec in toolbox.specs]
    options: dict[str, Any] = {}
    if tasks is not None:
        from .mcp_tasks import TasksExtension, legacy_task_middleware

        extension = TasksExtension(tasks, request_principal)
        options = {"extensions": [extension], "middleware": [legacy_task_middleware(extension)]}
    return _served(_ZarniwoopMCPServer(tools=tools, **_OPTIONS, **options))


def build_late_mcp_server(tools: asyncio.Future[MCPServer[Any]]) -> MCPServer[Any]:
    """A server that answers `initialize` before its tools exist: `tools/list` and `tools/call`
    wait for `tools` (a `build_mcp_server` server) and go to it; if `tools` fails, they fail."""
    return _served(_LateToolsServer(tools, **_OPTIONS))


# log_level: the SDK configures the root logger when nothing did; keep it quiet (stdio shares the terminal).
_OPTIONS: dict[str, Any] = {
    "name": "zarniwoop",
    "instructions": INSTRUCTIONS,
    "version": __version__,
    "log_level": "WARNING",
    "subscriptions": False,
}


def _served(server: MCPServer[Any]) -> MCPServer[Any]:
    # No public way to leave them out: without these handlers the capabilities advertise tools only.
    # A private name of the SDK: pinned below the next minor in pyproject.toml and watched by
    # tests/test_library_canaries.py, which fails naming it when it moves.
    handlers = server._lowlevel_server._request_handlers
    for method in UNSERVED_METHODS:
        handlers.pop(method, None)
    return server


def _tool(
    spec: ToolSpec[Any], toolbox: Toolbox, principal_of: PrincipalResolver, profile_of: ProfileResolver
) -> Tool:
    from ..dispatch.profiles import ProfileChoice

    async def call(arguments: dict[str, Any], ctx: Context[Any, Any]) -> CallToolResult:
        principal = principal_of(ctx)
        profile = ProfileChoice(profile_of(ctx), principal.profile)

        async def report(step: ProgressStep) -> None:
            await ctx.report_progress(step.done, step.total, f"{step.step}: {step.message}")

        try:
            result = await toolbox.execute(
                spec.name,
                arguments,
                principal.scope_for(),
                admin=principal.admin,
                progress=report,
                profile=profile,
            )
        except InvalidRequestError as exc:  # bad arguments: the model reads which field and why
            raise invalid_params(exc) from None
        except ZarniwoopError as exc:
            raise ToolError(exc.message) from None
        return CallToolResult(
            content=[TextContent(type="text", text=result.text)],
            structured_content=dict(result.structured),
            is_error=result.is_error,
        )

    annotations = spec.annotations
    return Tool(
        fn=call,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        parameters=spec.input_schema,
        fn_metadata=FuncMetadata(arg_model=_RawArguments, output_schema=spec.output_schema),
        is_async=True,
        context_kwarg="ctx",
        annotations=ToolAnnotations(
            title=annotations["title"],
            read_only_hint=annotations["readOnlyHint"],
            destructive_hint=annotations["destructiveHint"],
            open_world_hint=annotations["openWorldHint"],
        ),
    )


__all__ = [
    "PRINCIPAL_KEY",
    "PROFILE_KEY",
    "build_late_mcp_server",
    "build_mcp_server",
    "fixed_principal",
    "fixed_profile",
    "http_principal",
    "http_profile",
    "invalid_params",
    "request_principal",
]

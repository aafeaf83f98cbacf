"""`zarniwoop mcp`: the five tools to an MCP host (Claude Desktop, an IDE, …) over stdio.

stdout carries only MCP messages; anything else goes to stderr. Calls act on the scope of the
global `--tenant`/`--project` options; `--role user` hides operator details (`lastError`).

Start-up budget (issue 26): `initialize` is answered before anything but the MCP SDK is imported.
The runtime (database, dispatcher, tools) opens once the host has its answer — on the next message,
`notifications/initialized` — with its imports on a worker thread; `tools/list` and `tools/call`
wait for it (`surfaces.mcp.build_late_mcp_server`). A config or profile error still ends the command
with exit 2 and one line on stderr, also when the host leaves before sending anything.
`bench/mcp_startup.py` measures it.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import traceback
from typing import TYPE_CHECKING, Any

import typer

from .app import Globals, error_line, guarded

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ...runtime import Runtime

RUNTIME_MODULES = (
    "zarniwoop.runtime",
    "zarniwoop.tools.registry",
    "zarniwoop.dispatch.profiles",
    "zarniwoop.storage.retention",
)
"""What opening the runtime imports; on a worker thread, so the event loop keeps answering."""


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)


def mcp(
    ctx: typer.Context,
    role: str = typer.Option(
        "admin", "--role", help="user or admin (admin also sees providers' last errors)."
    ),
    profile: str | None = typer.Option(
        None,
        "--profile",
        help="Route every search through this agent profile (a tool argument may name another).",
    ),
) -> None:
    """Serve the research tools over MCP on stdin/stdout."""
    if role not in ("user", "admin"):
        typer.echo(f"error: --role: expected user or admin, got {role!r}", err=True)
        raise typer.Exit(2)
    g: Globals = ctx.obj
    guarded(g, lambda: asyncio.run(serve_stdio(g, role, profile or None)))


async def serve_stdio(g: Globals, role: str, profile: str | None) -> None:
    from ..mcp import build_late_mcp_server

    loop = asyncio.get_running_loop()
    tools: asyncio.Future[MCPServer[Any]] = loop.create_future()
    server = build_late_mcp_server(tools)
    opened: list[Runtime] = []
    opening: list[asyncio.Task[None]] = []
    serving = True

    async def open_tools() -> None:
        try:
            await asyncio.to_thread(lambda: [importlib.import_module(m) for m in RUNTIME_MODULES])
            tools.set_result(await _tools_server(g, role, profile, opened))
        except Exception as exc:
            while opened:
                await opened.pop().aclose()
            if serving:  # stdin is read on a thread no cancellation reaches: end the process here
                _exit_now(g, exc)
            tools.set_exception(exc)
            raise

    def start() -> None:
        if not opening:
            opening.append(loop.create_task(open_tools()))

    async def open_after_initialize(ctx: Any, call_next: Any) -> Any:
        if ctx.method != "initialize":  # the host has its `initialize` answer when it sends another
            start()
        return await call_next(ctx)

    server.middleware.append(open_after_initialize)
    try:
        await server.run_stdio_async()
    finally:
        serving = False
    try:
        start()  # a host that left before any call: the config and the profile are still checked
        await opening[0]
    finally:
        if not tools.done():
            tools.cancel()
        elif not tools.cancelled():
            tools.exception()  # marks it retrieved: `await opening[0]` raised it already
        while opened:
            await opened.pop().aclose()


def _exit_now(g: Globals, exc: Exception) -> None:
    """The one error line `guarded` would print, and its exit code, at once."""
    if g.debug:
        traceback.print_exception(exc)
    line, code = error_line(exc)
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
    os._exit(code)


async def _tools_server(g: Globals, role: str, profile: str | None, opened: list[Runtime]) -> MCPServer[Any]:
    from ...dispatch.profiles import find_profile
    from ...runtime import Runtime
    from ...tenancy.tokens import Principal
    from ...tools.registry import Toolbox
    from ..mcp import build_mcp_server, fixed_principal, fixed_profile
    from .app import purge_usage_if_due

    rt = await Runtime.open(g.config)
    opened.append(rt)
    await purge_usage_if_due(rt)
    principal = Principal(g.tenant, g.project, role)
    if profile:  # an unknown profile ends the command (exit 2), not every call
        find_profile((await rt.dispatcher.factory.providers(principal.scope_for())).settings, profile)
    return build_mcp_server(Toolbox(rt), fixed_principal(principal), fixed_profile(profile))

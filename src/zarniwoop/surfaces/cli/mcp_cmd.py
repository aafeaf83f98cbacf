"""`zarniwoop mcp`: the five tools to an MCP host (Claude Desktop, an IDE, …) over stdio.

stdout carries only MCP messages; anything else goes to stderr. Calls act on the scope of the
global `--tenant`/`--project` options; `--role user` hides operator details (`lastError`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from .app import run

if TYPE_CHECKING:
    from ...runtime import Runtime


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

    async def body(rt: Runtime) -> None:
        from ...dispatch.profiles import find_profile
        from ...tenancy.tokens import Principal
        from ...tools.registry import Toolbox
        from ..mcp import build_mcp_server, fixed_principal, fixed_profile

        principal = Principal(ctx.obj.tenant, ctx.obj.project, role)
        if profile:  # an unknown profile is a start-up error, not every call's
            find_profile((await rt.dispatcher.factory.providers(principal.scope_for())).settings, profile)
        server = build_mcp_server(Toolbox(rt), fixed_principal(principal), fixed_profile(profile or None))
        await server.run_stdio_async()

    run(ctx, body)

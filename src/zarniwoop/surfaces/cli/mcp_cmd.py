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
) -> None:
    """Serve the research tools over MCP on stdin/stdout."""
    if role not in ("user", "admin"):
        typer.echo(f"error: --role: expected user or admin, got {role!r}", err=True)
        raise typer.Exit(2)

    async def body(rt: Runtime) -> None:
        from ...tenancy.tokens import Principal
        from ...tools.registry import Toolbox
        from ..mcp import build_mcp_server, fixed_principal

        principal = Principal(ctx.obj.tenant, ctx.obj.project, role)
        server = build_mcp_server(Toolbox(rt), fixed_principal(principal))
        await server.run_stdio_async()

    run(ctx, body)

"""`zarniwoop projects stop`: evict a project's provider instances and clean its workspace."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from .app import command_group, name_param, run

if TYPE_CHECKING:
    from ...runtime import Runtime

projects_app, register = command_group("projects", "Project lifecycle.")


@projects_app.command("stop")
def stop(
    ctx: typer.Context,
    project: str | None = typer.Argument(None, help="Project (default: --project).", callback=name_param),
    wait: float = typer.Option(5.0, "--wait", min=0, help="Seconds to wait for a running server's answer."),
) -> None:
    """Dispose the project's provider instances and remove its content workspace."""
    from ...contract.query import SearchScope

    async def body(rt: Runtime) -> tuple[int, int | None]:
        from ... import operations

        scope = SearchScope(ctx.obj.tenant, project or ctx.obj.project)
        return await operations.stop_project(rt, scope), await operations.request_project_stop(
            rt, scope, wait=wait
        )

    mine, served = run(ctx, body)
    name = f"{ctx.obj.tenant}/{project or ctx.obj.project}"
    typer.echo(f"stopped {name}: {mine} provider instances disposed")
    if served is None:
        typer.echo(f"no running server answered within {wait:g} s (none running, or it will when it polls)")
    else:
        typer.echo(f"the running server disposed {served} provider instances of {name}")

"""`zarniwoop projects stop`: evict a project's provider instances and clean its workspace."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from .app import name_param, run

if TYPE_CHECKING:
    from ...runtime import Runtime

projects_app = typer.Typer(help="Project lifecycle.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(projects_app, name="projects")


@projects_app.command("stop")
def stop(
    ctx: typer.Context,
    project: str | None = typer.Argument(None, help="Project (default: --project).", callback=name_param),
) -> None:
    """Dispose the project's provider instances and remove its content workspace."""
    from ...contract.query import SearchScope

    async def body(rt: Runtime) -> int:
        return await rt.stop_project(SearchScope(ctx.obj.tenant, project or ctx.obj.project))

    disposed = run(ctx, body)
    typer.echo(
        f"stopped {ctx.obj.tenant}/{project or ctx.obj.project}: {disposed} provider instances disposed"
    )

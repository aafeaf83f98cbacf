"""The LLM usage dashboard on the command line (seed 002 §9).

`show_llm_usage(ctx, account=…, project=…, as_json=…)` is what `zarniwoop llm usage` runs; the
`usage` command (search usage) can call it for `zarniwoop usage --llm`. `--json` prints the same
dict as `GET /v1/usage` (`Runtime.usage_dashboard`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from .app import print_json, run

if TYPE_CHECKING:
    from ...runtime import Runtime


def show_llm_usage(
    ctx: typer.Context, *, account: str | None = None, project: str | None = None, as_json: bool = False
) -> None:
    if account and project:
        typer.echo("error: give --account or --project, not both", err=True)
        raise typer.Exit(2)

    async def body(rt: Runtime) -> dict[str, Any]:
        from ... import operations

        return await operations.usage_dashboard(rt, ctx.obj.tenant, account=account, project=project)

    board = run(ctx, body)
    if as_json:
        print_json(board)
        return
    from ...llm.usage import render_dashboard

    typer.echo(render_dashboard(board), nl=False)

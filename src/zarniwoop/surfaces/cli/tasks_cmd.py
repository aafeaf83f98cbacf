"""`zarniwoop tasks get|cancel|list` and `investigate --detach`: research that runs on after the
command that started it (issue 45, docs/tasks.md).

`investigate --detach` records the task and starts a runner process of its own (`tasks run ID`, in
a new session: closing the terminal does not stop it), then prints the task id at once. Any process
on the same database answers for the task: these commands, or `zarniwoop serve` (whose sweep also
takes over a task whose runner died). `tasks get` of a task left `working` by a runner that died
starts a new runner for it, so no task stays `working` for good; after `MAX_RUNS` starts it ends
`failed`, with the reason.

The CLI's tasks belong to the scope of `--tenant`/`--project` and to no token: `/v1/tasks` callers
(who hold a token) do not see them, nor do they see these.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import typer

from .app import Globals, command_group, console, fail, print_json, run

if TYPE_CHECKING:
    from ...runtime import Runtime
    from ...tasks.store import TaskCaller, TaskRecord
    from ...tools.inputs import ResearchInvestigateInput

tasks_app, register = command_group(
    "tasks", "Tasks: investigations that run on after the command that started them."
)
POLL_SECONDS = 0.5
LOG_FILE = "tasks.log"
"""Under ZARNIWOOP_HOME: what detached runners wrote on stderr (a runner has no terminal)."""


def local_caller(g: Globals) -> TaskCaller:
    from ...tasks.store import TaskCaller

    return TaskCaller(g.tenant, g.project, "")


async def detach(rt: Runtime, g: Globals, args: ResearchInvestigateInput, *, cache: bool) -> TaskRecord:
    """Record an investigation as a task and start a runner process for it (`investigate --detach`)."""
    from ...tasks.runner import TaskRunner
    from ...tools.investigate import INVESTIGATE
    from ...tools.registry import Toolbox

    runner = TaskRunner(rt.task_store, Toolbox(rt), rt.settings)
    record = await runner.start(INVESTIGATE, args, local_caller(g), admin=True, cache=cache, run_here=False)
    _spawn_runner(rt, g, record.id)
    return record


def _spawn_runner(rt: Runtime, g: Globals, task_id: str) -> None:
    command = [sys.executable, "-m", "zarniwoop", *(["--config", g.config] if g.config else [])]
    with (rt.home / LOG_FILE).open("a") as log:
        subprocess.Popen(
            [*command, "tasks", "run", task_id],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )


@tasks_app.command("run", hidden=True)
def run_task(ctx: typer.Context, task_id: str = typer.Argument(...)) -> None:
    """Run one task to its end in this process (the runner `investigate --detach` starts)."""

    async def body(rt: Runtime) -> None:
        from ...tasks.runner import TaskRunner
        from ...tools.registry import Toolbox

        runner = TaskRunner(rt.task_store, Toolbox(rt), rt.settings)
        try:
            await runner.run_until_done(task_id)
        finally:
            await runner.aclose()

    run(ctx, body)


@tasks_app.command("get")
def get(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., help="The id `investigate --detach` printed."),
    wait: bool = typer.Option(False, "--wait", help="Wait until it is no longer working."),
    as_json: bool = typer.Option(False, "--json", help="Print the task JSON (as GET /v1/tasks/{id})."),
) -> None:
    """A task's status, progress and, once completed, its result."""
    g: Globals = ctx.obj

    async def body(rt: Runtime) -> TaskRecord:
        caller = local_caller(g)
        while True:
            record = await rt.task_store.get(task_id, caller)
            if record is None:
                raise fail(
                    f"no task {task_id!r} in {g.tenant}/{g.project} (unknown, expired, or another scope's)"
                )
            if record.state == "working" and record.lease_until < rt.clock.now():
                _spawn_runner(rt, g, task_id)  # its runner died: start another (or end it failed)
            if record.done or not wait:
                return record
            await asyncio.sleep(POLL_SECONDS)

    record = run(ctx, body)
    if as_json:
        print_json(record.to_json())
        return
    _show(record)


@tasks_app.command("cancel")
def cancel(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., help="The id `investigate --detach` printed."),
    as_json: bool = typer.Option(False, "--json", help="Print the task JSON."),
) -> None:
    """Cancel a task: its runner stops before its next search (a finished task stays as it was)."""
    g: Globals = ctx.obj

    async def body(rt: Runtime) -> TaskRecord:
        record = await rt.task_store.cancel(task_id, local_caller(g))
        if record is None:
            raise fail(
                f"no task {task_id!r} in {g.tenant}/{g.project} (unknown, expired, or another scope's)"
            )
        return record

    record = run(ctx, body)
    if as_json:
        print_json(record.to_json(result=False))
    else:
        typer.echo(f"{record.id} {record.state}")


@tasks_app.command("list")
def list_tasks(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help='Print {"tasks": [task, …]} (no results).'),
) -> None:
    """This scope's tasks, newest first."""
    g: Globals = ctx.obj

    async def body(rt: Runtime) -> list[TaskRecord]:
        return await rt.task_store.list_for(local_caller(g))

    records = run(ctx, body)
    if as_json:
        print_json({"tasks": [r.to_json(result=False) for r in records]})
        return
    from rich.table import Table

    table = Table(header_style="bold")
    for column in ("id", "tool", "status", "progress", "created"):
        table.add_column(column)
    for r in records:
        table.add_row(r.id, r.tool, r.state, _progress_line(r.progress), r.to_json()["createdAt"])
    console().print(table)


def _progress_line(progress: Any) -> str:
    if not progress:
        return ""
    total = progress.get("total")
    return f"{progress['done']}/{total} {progress['message']}" if total else progress["message"]


def _show(record: TaskRecord) -> None:
    from rich.markup import escape

    out = console()
    out.print(f"{record.id} [bold]{record.state}[/bold] {escape(_progress_line(record.progress))}")
    if record.error:
        out.print(f"[red]{escape(record.error)}[/red]")
    if record.state == "completed" and record.result is not None:
        typer.echo(record.result["text"])


__all__ = ["detach", "register"]

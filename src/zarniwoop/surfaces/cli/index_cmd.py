"""`zarniwoop index PATH`: build or update the project's local document index.

    zarniwoop index ~/notes                      # incremental: only new and changed files are read
    zarniwoop --project review index ./papers    # each project has its own index
    zarniwoop index ~/notes --rebuild            # start over: drop the project's index first
    zarniwoop index ~/notes --json               # the report as JSON

Then `zarniwoop search "…" -m internal_doc` (or `-m rag`) searches it through the `local` provider.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import typer

from .app import console, fail, print_json, run

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from ...localindex.indexer import IndexReport
    from ...runtime import Runtime

PROGRESS_AFTER_FILES = 20
"""Fewer files finish before a progress bar would be worth drawing."""


def register(app: typer.Typer) -> None:
    app.command("index")(index)


def index(
    ctx: typer.Context,
    path: str = typer.Argument(
        ..., metavar="PATH", help="Folder (or one file) of text, Markdown, HTML and PDF files."
    ),
    rebuild: bool = typer.Option(
        False, "--rebuild", help="Drop the project's index (every folder in it) and build it from PATH."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Index documents under PATH for `search -m internal_doc` (SQLite FTS5, BM25, per project)."""
    from ...contract.errors import ZarniwoopError
    from ...localindex.indexer import check_target, index_path

    try:  # before the runtime opens: a wrong PATH writes nothing
        target = check_target(path)
    except ZarniwoopError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(2) from None
    if not ctx.obj.debug:
        logging.getLogger("pypdf").setLevel(logging.ERROR)  # its spec-deviation chatter is not ours
    scope = ctx.obj.scope

    async def body(rt: Runtime) -> IndexReport:
        import asyncio

        from ...contract.errors import IndexFormatError

        with _Progress(enabled=not as_json) as progress:
            try:
                return await asyncio.to_thread(
                    index_path,
                    target,
                    rt.home,
                    scope.tenant,
                    scope.project,
                    rebuild=rebuild,
                    progress=progress,
                )
            except IndexFormatError as exc:
                raise fail(str(exc)) from None

    report = run(ctx, body)
    if as_json:
        print_json(report.to_json())
    else:
        render_report(report)


class _Progress:
    """A rich progress bar on a terminal once a run has enough files; nothing otherwise."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def __enter__(self) -> _Progress:
        return self

    def __call__(self, done: int, total: int, current: str) -> None:
        if not self.enabled or total < PROGRESS_AFTER_FILES:
            return
        if self.bar is None or self.task is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            err = Console(stderr=True)
            if not err.is_terminal:
                self.enabled = False
                return
            bar = Progress(
                TextColumn("indexing"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("[dim]{task.description}"),
                console=err,
                transient=True,
            )
            bar.start()
            self.bar, self.task = bar, bar.add_task("", total=total)
        name = current.rsplit("/", 1)[-1][-40:]
        self.bar.update(self.task, completed=done, description=name)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def render_report(report: IndexReport) -> None:
    from rich.markup import escape

    # Lines that carry a path are soft-wrapped: the terminal folds them, and a copied path stays whole.
    out = console()
    summary = (
        f"[bold]{report.indexed}[/bold] new, [bold]{report.updated}[/bold] updated, "
        f"{report.unchanged} unchanged, {report.removed} removed, "
        f"{len(report.skipped)} skipped, {len(report.failed)} failed"
    )
    out.print(
        f"{escape(report.path)}: {summary} · {report.passages_written} passages written", soft_wrap=True
    )
    for label, notes, colour in (
        ("failed", report.failed, "red"),
        ("skipped", report.skipped, "yellow"),
        ("warning", report.warnings, "yellow"),
    ):
        for note in notes:
            out.print(
                f"  [{colour}]{label}[/{colour}] {escape(note.path)}: {escape(note.reason)}", soft_wrap=True
            )
    total = report.indexed + report.updated + report.unchanged
    if not total and not report.failed and not report.skipped and not report.removed:
        out.print("[yellow]no text, Markdown, HTML or PDF files found[/yellow]")
    out.print(
        f"[dim]index: {report.documents} files, {report.passages} passages · {escape(report.index)} · "
        f"{report.elapsed_ms / 1000:.2f} s{' (rebuilt)' if report.rebuilt else ''}[/dim]",
        soft_wrap=True,
    )

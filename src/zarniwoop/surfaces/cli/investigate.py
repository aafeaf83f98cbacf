"""`zarniwoop investigate QUESTION`: the curated pipeline — plan, searches, dedup, evaluation, ranking.

While it runs on a terminal, each step (plan, search n/m, dedup, evaluate, …) is a line on stderr
above a rich progress bar that goes away at the end; stdout carries only the answer (the `--json`
document). Where stderr is no terminal (a script, a pipe, CI) nothing is drawn, so stderr keeps only
the one error line a failure writes.

`--detach` runs it as a task instead (`tasks_cmd.py`): the id is printed at once (`--json`:
`{"taskId", "status"}`), and `zarniwoop tasks get ID` shows its progress and result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from .app import VERBOSE_HELP, console, print_json, report_failure, run

if TYPE_CHECKING:
    from ...contract.progress import ProgressObserver, ProgressStep
    from ...research.model import RankedHitSet
    from ...runtime import Runtime


@contextmanager
def progress_display() -> Iterator[ProgressObserver | None]:
    """A progress observer drawing on stderr (a line per step and a transient bar); None off a terminal."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

    err = Console(stderr=True)
    if not err.is_terminal:
        yield None
        return
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("planning", total=None)

        async def observe(step: ProgressStep) -> None:
            bar.console.print(f"[dim]{step.step}[/dim] {escape(step.message)}", highlight=False)
            bar.update(task, completed=step.done, total=step.total, description=step.step)

        yield observe


def register(app: typer.Typer) -> None:
    app.command("investigate")(investigate)


def investigate(
    ctx: typer.Context,
    question: str = typer.Argument(..., help="The research question."),
    max_results: int = typer.Option(10, "-n", "--max", help="Maximum ranked hits (1–100)."),
    depth: int = typer.Option(
        0, "--depth", help="0 = snippets only; >0 loads content of top hits before evaluating."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the RankedHitSet JSON."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Skip cached answers: ask the providers now."),
    no_insights: bool = typer.Option(False, "--no-insights", help="Skip the claims and entities."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help=VERBOSE_HELP),
    detach: bool = typer.Option(
        False, "--detach", help="Run it as a task: print its id now; `zarniwoop tasks get ID` later."
    ),
) -> None:
    """Research a question across sources: ranked hits with reasons, and reasons for every dropped one."""
    if detach:
        _detach(ctx, question, max_results, depth, no_insights, no_cache, as_json)
        return

    async def body(rt: Runtime) -> tuple[RankedHitSet, Mapping[str, Any] | None]:
        from ...observability.tracing import with_trace_id

        with progress_display() as observe:
            ranked = await rt.investigator.investigate(
                question,
                ctx.obj.scope,
                max_results=max_results,
                depth=depth,
                insights=False if no_insights else None,
                progress=observe,
                cache=not no_cache,
            )
        return ranked, with_trace_id(ranked.to_json()) if as_json else None  # in the command's span

    ranked, document = run(ctx, body)
    failed = [s for s in ranked.searches if s.get("errorMessage")]
    every_search_failed = bool(ranked.searches) and len(failed) == len(ranked.searches)
    if document is not None:
        print_json(document)
    if every_search_failed:
        summary = ranked.failure_summary or "every provider failed"
        report_failure(f"every search failed: {summary}", _failures(failed), verbose)
        raise typer.Exit(3)
    if as_json:
        return
    from rich.markup import escape
    from rich.table import Table

    from ...research.model import finders

    out = console()
    out.print(f"[bold]{ranked.question}[/bold]\n[dim]{ranked.rationale}[/dim]")
    table = Table(header_style="bold")
    for col in ("#", "score", "title / url", "sources", "why"):
        table.add_column(col)
    for i, ranked_hit in enumerate(ranked.hits, 1):
        table.add_row(
            str(i),
            f"{ranked_hit.score:.2f}",
            f"{ranked_hit.hit.title}\n[blue]{ranked_hit.hit.url}[/blue]",
            finders(ranked_hit.sources),
            ranked_hit.reason,
        )
    out.print(table)
    if ranked.insights is not None and ranked.insights.claims:
        number = {h.key: n for n, h in enumerate(ranked.hits, 1)}
        out.print("[bold]insights[/bold]")
        for claim in ranked.insights.claims:
            cited = ", ".join(str(number[k]) for k in claim.citations)
            out.print(f"  - {escape(claim.text)} [dim]\\[{cited}][/dim]")
    if ranked.dropped:
        out.print(f"[dim]dropped {len(ranked.dropped)}:[/dim]")
        for dropped in ranked.dropped:
            out.print(f"[dim]  - {dropped.hit.title}: {dropped.reason}[/dim]")
    if failed:
        out.print(
            f"[yellow]{len(failed)} of {len(ranked.searches)} searches failed: {ranked.failure_summary}[/yellow]",
            highlight=False,
        )
        for line in _failures(failed) if verbose else ():
            out.print(f"[yellow]  {escape(line)}[/yellow]", highlight=False)
    strategies = " · ".join(f"{step}: {name}" for step, name in ranked.strategies.items())
    out.print(f"[dim]{escape(strategies)}[/dim]")


def _detach(
    ctx: typer.Context,
    question: str,
    max_results: int,
    depth: int,
    no_insights: bool,
    no_cache: bool,
    as_json: bool,
) -> None:
    from .tasks_cmd import detach

    async def body(rt: Runtime) -> Any:
        from ...tools.investigate import INVESTIGATE
        from ...tools.registry import parse_arguments

        arguments = {"question": question, "maxResults": max_results, "depth": depth}
        if no_insights:
            arguments["insights"] = False
        return await detach(rt, ctx.obj, parse_arguments(INVESTIGATE, arguments), cache=not no_cache)

    record = run(ctx, body)
    if as_json:
        print_json({"taskId": record.id, "status": record.state})
    else:
        typer.echo(record.id)


def _failures(searches: list[dict[str, Any]]) -> list[str]:
    return [f"{s['modality']} {s['query']!r}: {s['errorMessage']}" for s in searches]

"""`zarniwoop search`, `providers` and `routing`."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .app import VERBOSE_HELP, Exit, console, fail, plural, print_json, report_failure, run

if TYPE_CHECKING:
    from ...contract.results import SearchHit, SearchResult
    from ...runtime import Runtime


def register(app: typer.Typer) -> None:
    app.command("search")(search)
    app.command("providers")(providers)
    app.command("routing")(routing)
    app.command("profiles")(profiles)


def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to search for."),
    modality: str = typer.Option(
        "WEB", "-m", "--modality", help="WEB IMAGE VIDEO PDF NEWS ACADEMIC ENCYCLOPEDIA BOOK …"
    ),
    max_results: int = typer.Option(10, "-n", "--max", help="Maximum hits (1–100)."),
    tier: str = typer.Option("normal", "--tier", help="normal or expert."),
    site: str | None = typer.Option(None, "--site"),
    filetype: str | None = typer.Option(None, "--filetype"),
    date_from: str | None = typer.Option(None, "--date-from", help="ISO date."),
    date_to: str | None = typer.Option(None, "--date-to", help="ISO date."),
    domain: str | None = typer.Option(None, "--domain"),
    language: str | None = typer.Option(None, "--language"),
    provider: str | None = typer.Option(None, "--provider", help="Pin one provider instance (expert tier)."),
    locale: str | None = typer.Option(None, "--locale", help="e.g. de, en-GB"),
    profile: str | None = typer.Option(
        None, "--profile", help="Route through this agent profile's providers (zarniwoop profiles)."
    ),
    include_domain: Annotated[
        list[str] | None, typer.Option("--include-domain", help="Only hits from this domain (repeatable).")
    ] = None,
    exclude_domain: Annotated[
        list[str] | None, typer.Option("--exclude-domain", help="No hits from this domain (repeatable).")
    ] = None,
    time_range: str | None = typer.Option(None, "--time-range", help="day, week, month or year."),
    safe_search: str | None = typer.Option(None, "--safe-search", help="off, moderate or strict."),
    region: str | None = typer.Option(None, "--region", help="ISO 3166 country code, e.g. DE."),
    strict_filters: bool = typer.Option(
        False, "--strict-filters", help="Skip providers that cannot honour a filter."
    ),
    page: str | None = typer.Option(None, "--page", help="The nextPage cursor of a previous result."),
    next_page: bool = typer.Option(
        False, "--next", help="The next page of the last search (same query and filters)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the SearchResult JSON."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Skip cached answers: ask the providers now."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help=VERBOSE_HELP),
) -> None:
    """Search one modality through the provider cascade."""
    from ...contract.enums import EXPERT_PARAMS
    from ...contract.filters import SearchFilters
    from ...contract.query import SearchRequest

    # the expert parameters under their contract names, in `EXPERT_PARAMS`'s order
    expert = dict(zip(EXPERT_PARAMS, (site, filetype, date_from, date_to, domain, language), strict=True))

    def build_request(cursor: str | None = page) -> SearchRequest:
        filters = SearchFilters.create(
            include_domains=include_domain,
            exclude_domains=exclude_domain,
            time_range=time_range,
            safe_search=safe_search,
            language=None,
            region=region,
            page=cursor,
            strict=strict_filters,
        )
        return SearchRequest.create(
            query=query,
            modality=modality,
            tier=tier,
            max_results=max_results,
            locale=locale,
            pinned_provider_id=provider,
            expert_params=expert,
            profile=profile,
            filters=filters,
        )

    async def body(rt: Runtime) -> tuple[SearchResult, Mapping[str, Any] | None]:
        from ...observability.tracing import with_trace_id
        from .paging import last_cursor, remember_cursor

        scope = ctx.obj.scope
        cursor = page
        if next_page:
            cursor = last_cursor(rt.home, scope)
            if cursor is None:
                raise fail("page: no next page to read; the last search here returned no nextPage")
        result = await rt.dispatcher.search(build_request(cursor), scope, cache=not no_cache)
        remember_cursor(rt.home, scope, result.next_page)
        return result, with_trace_id(result.to_json()) if as_json else None  # in the command's span

    # Validate before opening the runtime, so bad input writes nothing (not even a database file).
    from ...contract.errors import ZarniwoopError

    if next_page and page:
        typer.echo("error: page: give --page CURSOR or --next, not both", err=True)
        raise typer.Exit(2)
    try:
        build_request()
    except ZarniwoopError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(2) from None
    if as_json or not sys.stderr.isatty():
        result, document = run(ctx, body)
    else:  # a slow cascade (a firewall dropping packets) shows it is working, on stderr only
        from rich.console import Console

        with Console(stderr=True).status(f"searching {modality.upper()}…"):
            result, document = run(ctx, body)
    if document is not None:
        print_json(document)
    else:
        render_result(result)
    if result.error_message:
        report_failure(result.error_summary or result.error_message, failure_details(result), verbose)
    code = exit_code(result)
    if code:
        raise typer.Exit(code)


def exit_code(result: SearchResult) -> int:
    """0 ok (also an honest empty result), 3 every provider failed, 4 quota exhausted (nothing was
    called, and a spent quota is why: the rest was disabled, keyless or not serving the modality)."""
    if result.error_message is None:
        return 0
    not_candidates = {"skipped_disabled", "skipped_no_key", "skipped_unsupported"}
    relevant = [a for a in result.attempts if a.outcome.value not in not_candidates]
    if relevant and all(a.outcome.value == "skipped_exhausted" for a in relevant):
        return 4
    return 3


def render_result(result: SearchResult) -> None:
    from rich.markup import escape
    from rich.table import Table

    out = console()
    if result.hits:
        table = Table(show_lines=False, header_style="bold")
        table.add_column("#", justify="right")
        # URLs are copied into browsers and `fetch-content`: folded onto more lines, never cut
        table.add_column("title / url", overflow="fold", ratio=3)
        table.add_column("snippet", ratio=2)
        for i, hit in enumerate(result.hits, 1):
            title, url = escape(hit.title), escape(hit.url)  # provider text is not markup
            table.add_row(str(i), f"[bold]{title}[/bold]\n[blue]{url}[/blue]", snippet_markup(hit))
        out.print(table)
    from ...dispatch.dispatcher import provenance_footer

    footer = provenance_footer(result)
    summary = ", ".join(f"{a.provider_instance_id}={a.outcome.value}" for a in result.attempts)
    out.print(
        f"[dim]{plural(result.returned_count, 'hit')} {footer or ''}{' (cached)' if result.cached else ''} · {summary}[/dim]"
    )
    if result.note:
        out.print(f"[yellow]note:[/yellow] {result.note}")
    for ignored in result.ignored_params:
        out.print(f"[yellow]ignored:[/yellow] {ignored.param} — {escape(ignored.reason)}")
    if result.next_page:
        out.print("[dim]more results: zarniwoop search … --next[/dim]")


def failure_details(result: SearchResult) -> list[str]:
    """`provider: reason` of each attempt that did not answer (disabled and unsupported ones aside)."""
    quiet = {"skipped_disabled", "skipped_unsupported", "success"}
    return [
        f"{a.provider_instance_id}: {a.error_message or a.outcome.value}"
        for a in result.attempts
        if a.outcome.value not in quiet
    ]


HIGHLIGHTED = frozenset({"INTERNAL_DOC", "RAG"})
"""Modalities whose snippets mark matched words `**so**` (the local index, for LLM tool text)."""
_BOLD = re.compile(r"\*\*(.+?)\*\*", re.DOTALL)


def snippet_markup(hit: SearchHit, limit: int = 200) -> str:
    """The hit's snippet as rich markup: provider text escaped (it is not markup); the local
    index's `**matched**` words shown bold, not as asterisks (an unpaired `**` cut by `limit` is dropped)."""
    from rich.markup import escape

    text = (hit.snippet or "")[:limit]
    if hit.modality.value not in HIGHLIGHTED:
        return escape(text)
    parts, start = [], 0
    for match in _BOLD.finditer(text):
        parts.append(escape(text[start : match.start()]))
        parts.append(f"[bold]{escape(match.group(1))}[/bold]")
        start = match.end()
    parts.append(escape(text[start:].replace("**", "")))
    return "".join(parts)


def providers(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json"),
    probe: bool = typer.Option(
        False, "--probe", help="First send each keyless provider one free probe (never a paid one)."
    ),
) -> None:
    """List the provider instances of the scope with availability, cooldowns and quota."""
    from ...views.providers import provider_entries

    async def body(rt: Runtime) -> list[dict[str, Any]]:
        from ... import operations

        if probe:
            await operations.probe_providers(rt, ctx.obj.scope)
        return await provider_entries(rt.dispatcher, ctx.obj.scope, admin=True)

    entries = run(ctx, body)
    if as_json:
        print_json({"providers": entries})
        return
    from rich.markup import escape
    from rich.table import Table

    table = Table(header_style="bold")
    columns = ["id", "protocol", "modalities", "availability", "keyable", "cooldown until", "reachable"]
    proxied = any(e.get("proxy") for e in entries)
    for col in [*columns, "proxy"] if proxied else columns:
        table.add_column(col, overflow="fold")  # ids are copied into other commands: never cut them
    colours = {"READY": "green", "COOLDOWN": "yellow", "EXHAUSTED": "red", "DISABLED": "dim"}
    for e in entries:
        colour = colours.get(e["availability"], "white")
        cooldown = ", ".join(f"{c['modality']} {c['until']}" for c in e["cooldowns"]) or "-"
        row = [
            e["id"],
            e["protocol"],
            " ".join(e["modalities"]),
            f"[{colour}]{e['availability']}[/{colour}]"
            + (f"\n[dim]{escape(e['statusText'])}[/dim]" if e.get("statusText") else ""),
            "yes" if e["keyable"] else "no key",
            cooldown,
            {True: "yes", False: "no", None: "-"}[e["reachable"]],
        ]
        table.add_row(*row, *([e.get("proxy") or "direct"] if proxied else []))
    console().print(table)


def routing(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json"),
    profile: str | None = typer.Option(
        None, "--profile", help="Also show this agent profile's cascade per modality."
    ),
) -> None:
    """Show the cascade per modality, the gate's verdict on each candidate, and which one serves now."""

    async def body(rt: Runtime) -> dict[str, Any]:
        from ... import operations

        return await operations.routing_report(rt, ctx.obj.scope, admin=True, profile=profile or None)

    view = run(ctx, body)
    if as_json:
        print_json(view)
        return
    out = console()
    title = f"search routing for {view['scope']['tenant']}/{view['scope']['project']}"
    out.print(_cascade_table(title, view["searchCascades"]))
    if "profile" in view:
        shown = view["profile"]
        out.print(
            _cascade_table(f"profile {shown['name']} ({shown['sha256'][:12]})", shown["searchCascades"])
        )
    llm = view.get("llm") or {}
    default = llm.get("default") or {}

    def resolved(target: dict[str, Any]) -> str:
        named = f" ({target['displayName']})" if target.get("displayName") else ""
        return target.get("error") or f"{target.get('instance')}:{target.get('model')}{named}"

    if default:
        out.print(f"LLM default → {resolved(default)}")
    for alias in llm.get("aliases", []):
        out.print(f"LLM {alias['alias']} ({alias['target']}) → {resolved(alias)}")


def _cascade_table(title: str, cascades: dict[str, list[dict[str, Any]]]) -> Any:
    from rich.table import Table

    table = Table(header_style="bold", title=title)
    table.add_column("modality")
    table.add_column("cascade (first = tried first; ·why it stands there)")
    for modality, steps in cascades.items():
        shown = []
        for step in steps:
            if step["selected"]:
                label = f"[bold green]{step['id']}[/bold green]" + (
                    " [red](panic)[/red]" if step.get("panic") else ""
                )
            elif step["gate"] == "ready":
                label = step["id"]
            else:
                label = f"[dim]{step['id']} ({step['gate'].removeprefix('skipped_')})[/dim]"
            place = step.get("place")
            shown.append(f"{label} [cyan]·{place}[/cyan]" if place else label)
        table.add_row(modality, " → ".join(shown))
    return table


def profiles(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")) -> None:
    """The agent profiles of this scope: providers per modality, content identity, level."""
    from ...views.providers import profile_entries

    async def body(rt: Runtime) -> dict[str, Any]:
        return await profile_entries(rt.dispatcher, ctx.obj.scope)

    document = run(ctx, body)
    if as_json:
        print_json(document)
        return
    out = console()
    if not document["profiles"]:
        out.print("no agent profiles (research.profile.<name>.providers)")
    for entry in document["profiles"]:
        lists = [", ".join(entry["providers"])] if entry["providers"] else []
        lists += [f"{m}: {', '.join(ids)}" for m, ids in entry["modalities"].items()]
        out.print(
            f"[bold]{entry['name']}[/bold] ({entry['level']}, {entry['sha256'][:12]}) — {'; '.join(lists)}"
        )


__all__ = ["Exit", "fail"]

"""`zarniwoop usage` (audit log per instance and modality) and `zarniwoop metrics` (Prometheus text).

    zarniwoop usage                     # the last 24 h of the default scope, as a table
    zarniwoop usage --since 7d --json   # {"scope", "research": {"since", "until", "rows", "totals", "quotas"}}
    zarniwoop usage --llm --account mike  # LLM tokens today / this month, by project, provider, account

`zarniwoop usage --llm [--account A | --project P] [--json]` prints the LLM usage dashboard instead
(`surfaces/cli/llm_usage.py`, the same JSON as `GET /v1/usage`).

`--timeseries [--bucket hour|day] [--by …]` prints the same over time, the JSON of
`GET /v1/usage/timeseries` (`ledger/series.py`): provider calls `--by instance|modality`,
or with `--llm` tokens and cost `--by project|account|model|provider`; the table lists the
buckets that had calls.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from .app import console, name_param, print_json, run

if TYPE_CHECKING:
    from ...runtime import Runtime


def register(app: typer.Typer) -> None:
    app.command("usage")(usage)
    app.command("metrics")(metrics)


def usage(
    ctx: typer.Context,
    since: str = typer.Option("24h", "--since", help="Window start: 24h, 7d, 30m or an ISO date (UTC)."),
    as_json: bool = typer.Option(False, "--json", help="Print the usage report JSON."),
    llm: bool = typer.Option(
        False, "--llm", help="LLM token usage instead: today/month, by project, provider, account."
    ),
    account: str | None = typer.Option(
        None, "--account", help="With --llm: one account.", callback=name_param
    ),
    project: str | None = typer.Option(
        None, "--project", help="With --llm: one project.", callback=name_param
    ),
    timeseries: bool = typer.Option(
        False, "--timeseries", help="Per hour or day, one series per instance (or --by), since --since."
    ),
    bucket: str = typer.Option("hour", "--bucket", help="With --timeseries: hour or day (UTC)."),
    by: str | None = typer.Option(
        None,
        "--by",
        help="With --timeseries: instance|modality, or with --llm project|account|model|provider.",
    ),
) -> None:
    """Provider calls, hits, failures, p50/p95 latency and quota per instance and modality
    (`--llm`: the LLM usage dashboard; `--timeseries`: either per hour or day)."""
    if timeseries:
        show_timeseries(
            ctx, since=since, bucket=bucket, by=by, llm=llm, account=account, project=project, as_json=as_json
        )
        return
    if llm:
        from .llm_usage import show_llm_usage

        show_llm_usage(ctx, account=account, project=project, as_json=as_json)
        return
    from ...contract.errors import ZarniwoopError
    from ...ledger import parse_since

    try:
        since_epoch = parse_since(since)
    except ZarniwoopError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(2) from None

    async def body(rt: Runtime) -> dict[str, Any]:
        from ... import operations

        research = await operations.research_usage(rt, ctx.obj.scope, since=since_epoch)
        scope = research.pop("scope")
        return {"scope": scope, "research": research}

    report = run(ctx, body)
    if as_json:
        print_json(report)
        return
    render_research(report)


def show_timeseries(
    ctx: typer.Context,
    *,
    since: str,
    bucket: str,
    by: str | None,
    llm: bool,
    account: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    import time

    from ...ledger import parse_since

    async def body(rt: Runtime) -> dict[str, Any]:
        now = time.time()
        start = parse_since(since, now=now)
        # --llm: the tenant's records, narrowed by --account/--project (not by the scope's project)
        return await rt.ledger.timeseries(
            "llm" if llm else "research",
            ctx.obj.scope,
            since=start,
            until=now,
            bucket=bucket,
            by=by,
            account=account,
            project=project,
        )

    report = run(ctx, body)
    if as_json:
        print_json(report)
        return
    from rich.table import Table

    kind = "LLM tokens" if llm else "search calls"
    table = Table(
        header_style="bold", title=f"{kind} per {report['bucket']} by {report['by']} since {report['since']}"
    )
    columns = (
        ("calls", "tokens in", "tokens out", "cost $") if llm else ("calls", "failures", "p50 ms", "p95 ms")
    )
    for column in (report["bucket"], report["by"], *columns):
        table.add_column(column, justify="left" if column in (report["bucket"], report["by"]) else "right")
    for series in report["series"]:
        name = " / ".join(str(v) for v in series["key"].values())
        for point in series["points"]:
            if not point["calls"]:
                continue
            if llm:
                cells = [
                    str(point["calls"]),
                    str(point["tokensInput"]),
                    str(point["tokensOutput"]),
                    f"{point['costUsd']:.4f}",
                ]
            else:
                cells = [
                    str(point["calls"]),
                    str(point["failures"]),
                    _ms(point["p50Ms"]),
                    _ms(point["p95Ms"]),
                ]
            table.add_row(point["t"], name, *cells)
    console().print(table)


def render_research(report: dict[str, Any]) -> None:
    from rich.table import Table

    research = report["research"]
    scope = report["scope"]
    table = Table(
        header_style="bold",
        title=f"search usage for {scope['tenant']}/{scope['project']} since {research['since']}",
    )
    for column in ("instance", "modality", "calls", "hits", "failures", "p50 ms", "p95 ms", "quota"):
        table.add_column(
            column, justify="right" if column not in ("instance", "modality", "quota") else "left"
        )
    for row in research["rows"]:
        table.add_row(
            row["instance"],
            row["modality"],
            str(row["calls"]),
            str(row["hits"]),
            f"[red]{row['failures']}[/red]" if row["failures"] else "0",
            _ms(row["p50Ms"]),
            _ms(row["p95Ms"]),
            _quota(row["quota"]),
        )
    totals = research["totals"]
    table.add_row("total", "", str(totals["calls"]), str(totals["hits"]), str(totals["failures"]), "", "", "")
    out = console()
    out.print(table)
    called = {row["instance"] for row in research["rows"]}
    for entry in research["quotas"]:
        if entry["instance"] not in called:
            out.print(
                f"[dim]{entry['instance']}: quota {_quota(entry['quota'])} (no calls in this window)[/dim]"
            )


def _ms(value: int | None) -> str:
    return "-" if value is None else str(value)


def _quota(quota: dict[str, Any] | None) -> str:
    if not quota:
        return "-"
    used = "?" if quota["used"] is None else quota["used"]
    limit = "?" if quota["limit"] is None else quota["limit"]
    return f"{used}/{limit} per {quota['period']} ({quota['source']})"


def metrics(
    url: str | None = typer.Option(
        None, "--url", help="A running server (http://127.0.0.1:8765): print its /metrics instead."
    ),
    token: str | None = typer.Option(
        None, "--token", envvar="ZARNIWOOP_TOKEN", help="Bearer token for --url (an operator token)."
    ),
) -> None:
    """Print Prometheus metrics: a running server's with --url, else this (fresh) process's own."""
    if url is None:
        from ...observability.metrics import render_metrics

        typer.echo(
            "note: these are this command's own counters (a fresh process: mostly zeros); "
            "a server's are at its /metrics, or: zarniwoop metrics --url http://127.0.0.1:8765 "
            "--token <operator token> (or ZARNIWOOP_TOKEN)",
            err=True,
        )
        sys.stdout.write(render_metrics().decode("utf-8"))
        return
    import asyncio

    from ...contract.errors import ProviderError
    from ...contract.protocol import RawResponse, RequestSpec
    from ...transport.http import HttpTransport

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    target = url.rstrip("/") + "/metrics"

    async def scrape() -> RawResponse:
        transport = HttpTransport()  # the operator named the URL: no proxy from the environment
        try:
            return await transport.send(
                RequestSpec("GET", target, headers=headers), timeout=10.0, max_redirects=0
            )
        finally:
            await transport.aclose()

    try:
        answer = asyncio.run(scrape())
    except ProviderError as exc:
        typer.echo(f"error: cannot read {target}: {exc.message}", err=True)
        raise typer.Exit(3) from None
    if answer.status in (401, 403):
        # /metrics is an operator's: say how to send one, not just the status the server answered
        why = (
            "it needs an operator token: pass --token or set ZARNIWOOP_TOKEN"
            if not token
            else "the token given (--token or ZARNIWOOP_TOKEN) is not an operator token it accepts"
        )
        typer.echo(f"error: {target} answered HTTP {answer.status}: {why}", err=True)
        raise typer.Exit(5)
    if answer.status != 200:
        typer.echo(f"error: {target} answered HTTP {answer.status}", err=True)
        raise typer.Exit(3)
    sys.stdout.write(answer.body.decode("utf-8", "replace"))

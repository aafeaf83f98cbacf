"""The LLM usage dashboard on the command line (seed 002 §9).

`show_llm_usage(ctx, account=…, project=…, as_json=…)` is what `zarniwoop llm usage` runs; the
`usage` command (search usage) can call it for `zarniwoop usage --llm`. `--json` prints the same
dict as `GET /v1/usage` (`operations.usage_dashboard`: `UsageLedger.llm_dashboard`); without `--json`
`render_dashboard` draws it as the seed's tree.
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
    typer.echo(render_dashboard(board), nl=False)


def render_dashboard(board: dict[str, Any]) -> str:
    """The seed's tree text, for the CLI."""
    scope = board["scope"]
    who = f"{scope['level'].capitalize()}: {scope['name']}" if scope["name"] else f"Tenant: {board['tenant']}"
    out: list[str] = []
    for key, title in (("today", "Today"), ("month", "This Month")):
        p = board[key]
        limit = f" / {_tokens(p['limit'])} ({p['percent']:.1f}%)" if p["limit"] else " / no limit"
        out.append(f"Token Usage — {title} ({who})")
        out.append(f"  ├── Total: {_tokens(p['totalTokens'])}{limit}  [{p['calls']} calls]")
        for label, rows, name in (
            ("By Project", p["byProject"], "project"),
            ("By Provider", p["byProvider"], "provider"),
            ("By Account", p["byAccount"], "account"),
        ):
            if not rows:
                continue
            out.append(f"  ├── {label}:")
            for row in rows:
                if name == "provider":
                    out.append(
                        f"  │     {row['provider']} ({row['credentialSource']} key): {_tokens(row['tokens'])}"
                    )
                elif name == "project":
                    limit_text = (
                        f" / {_tokens(row['monthlyLimit'])} monthly ({row['monthlyPercent']:.1f}%)"
                        if row.get("monthlyLimit")
                        else " / no project limit"
                    )
                    out.append(f"  │     {row['project']}: {_tokens(row['tokens'])}{limit_text}")
                else:
                    out.append(f"  │     {row['account']}: {_tokens(row['tokens'])}")
        cost = f"${p['estimatedCostUsd']:.2f}"
        if p["unpricedCalls"]:
            cost += f" (+{p['unpricedCalls']} unpriced calls)"
        out.append(f"  └── Estimated {'daily' if key == 'today' else 'monthly'} cost: {cost}")
        out.append("")
    if board["quotas"]:
        out.append("Quotas")
        for q in board["quotas"]:
            pct = q["percent"] or 0.0
            bar = "█" * min(20, int(pct // 5)) + "░" * (20 - min(20, int(pct // 5)))
            out.append(
                f"  {q['scope']:<28} {q['period']:<8} {bar} {pct:5.1f}%  {_tokens(q['tokensUsed'])} / {_tokens(q['tokensLimit'])}"
            )
    return "\n".join(out).rstrip() + "\n"


def _tokens(n: int | None) -> str:
    if n is None:
        return "-"
    if n >= 1_000_000:
        return f"{n / 1_000_000:.3g}M"
    if n >= 1000:
        return f"{n / 1000:.3g}k"
    return str(n)

"""The pieces the ledger's window reports are made of (`UsageLedger.research`,
`UsageLedger.llm_dashboard`): how provider calls are grouped and measured, and how charged LLM
calls are added up per period, project, provider, account and model.

    groups, totals = call_groups(rows)   # rows of CALL_COLUMNS
    groups[0]  # {"instance": "openalex", "protocol": "openalex", "modality": "ACADEMIC",
               #  "calls": 12, "hits": 96, "failures": 1, "p50Ms": 310, "p95Ms": 802}

Answered LLM calls and the ones their client abandoned count (`CHARGED`: an abandoned call spent
tokens too, `llm/settlement.py`), as in the timeseries (`ledger/series.py`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

from ..limits.token_budgets import QuotaLine
from .query import percentile, usd_total

if TYPE_CHECKING:
    from ..limits.token_budgets import LineStatus
    from ..tenancy.accounts import OrgDirectory, OrgUnit

CALL_COLUMNS: Final = ("instance_id", "protocol", "modality", "hit_count", "ok", "duration_ms")
"""What the search usage report reads of each `research_call_records` row."""
CHARGED: Final = "outcome IN ('ok', 'cancelled')"
"""The LLM calls that spent tokens: answered, or abandoned by their client and charged what the
upstream produced."""


def call_groups(rows: Iterable[Sequence[Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Calls, hits, failures and p50/p95 latency per (instance, modality), sorted, and the totals."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    durations: dict[tuple[str, str], list[int]] = defaultdict(list)
    for instance_id, protocol, modality, hits, ok, duration_ms in rows:
        group = groups.setdefault(
            (instance_id, modality),
            {
                "instance": instance_id,
                "protocol": protocol,
                "modality": modality,
                "calls": 0,
                "hits": 0,
                "failures": 0,
            },
        )
        group["calls"] += 1
        group["hits"] += int(hits)
        group["failures"] += 0 if ok else 1
        durations[(instance_id, modality)].append(int(duration_ms))
    out = []
    for key in sorted(groups):
        ordered = sorted(durations[key])
        out.append({**groups[key], "p50Ms": percentile(ordered, 0.50), "p95Ms": percentile(ordered, 0.95)})
    return out, {key: sum(group[key] for group in out) for key in ("calls", "hits", "failures")}


class Charge(NamedTuple):
    """The columns of one charged LLM call a dashboard adds up (`CHARGE_COLUMNS`, in this order)."""

    project: str | None
    account: str | None
    provider: str
    credential_source: str
    instance: str
    model: str
    tokens_total: int
    cost_usd: float | None
    created_at: str


CHARGE_COLUMNS: Final = (*Charge._fields[:6], "tokens_input + tokens_output", "cost_usd", "created_at")


def quota_lines(
    directory: OrgDirectory, tenant: str, account: str | None, project: str | None, records: Iterable[Charge]
) -> list[QuotaLine]:
    """A line per token limit (daily, monthly) of every org unit in the dashboard's view."""
    lines: list[QuotaLine] = []
    for unit in _units_in_view(directory, tenant, account, project, records):
        q = unit.llm.quota
        if q is None:
            continue
        owner = "_tenant" if unit.kind == "tenant" else unit.name
        for period, limit in (("daily", q.daily_tokens), ("monthly", q.monthly_tokens)):
            if limit is not None:
                lines.append(
                    QuotaLine(unit.kind, owner, period, limit, q.notify_pct, q.light_pct, q.block_pct)
                )
    return lines


def period_view(
    name: str, bucket: str, items: list[Charge], limit: int | None, project_limits: dict[str, LineStatus]
) -> dict[str, Any]:
    """One period of the dashboard (`daily` or `monthly`): totals against `limit`, and the breakdowns."""
    total = sum(int(r.tokens_total) for r in items)
    return {
        "period": name,
        "bucket": bucket,
        "totalTokens": total,
        "limit": limit,
        "percent": None if not limit else round(100.0 * total / limit, 2),
        "calls": len(items),
        "byProject": [
            {
                "project": key,
                "tokens": tokens,
                "monthlyLimit": project_limits[key].line.limit if key in project_limits else None,
                "monthlyPercent": round(project_limits[key].percent or 0, 2)
                if key in project_limits
                else None,
            }
            for key, tokens in _sum_by(items, lambda r: r.project or "-")
        ],
        "byProvider": [
            {"provider": key[0], "credentialSource": key[1], "tokens": tokens}
            for key, tokens in _sum_by(items, lambda r: (r.provider, r.credential_source))
        ],
        "byAccount": [
            {"account": key, "tokens": tokens} for key, tokens in _sum_by(items, lambda r: r.account or "-")
        ],
        "byModel": [
            {"instance": key[0], "model": key[1], "tokens": tokens}
            for key, tokens in _sum_by(items, lambda r: (r.instance, r.model))
        ],
        "estimatedCostUsd": usd_total(r.cost_usd for r in items),
        "unpricedCalls": sum(1 for r in items if r.cost_usd is None),
    }


def _units_in_view(
    directory: OrgDirectory,
    tenant: str,
    account: str | None,
    project: str | None,
    records: Iterable[Charge],
) -> list[OrgUnit]:
    if not account and not project:
        return directory.units(tenant)
    if account:
        names = {r.project for r in records if r.project}
        found = [directory.unit(tenant, "account", account)] + [
            directory.unit(tenant, "project", p) for p in sorted(names)
        ]
    else:
        found = [directory.unit(tenant, "project", project)]
    return [u for u in found if u is not None]


_Key = TypeVar("_Key", str, tuple[str, str])


def _sum_by(records: Iterable[Charge], key: Callable[[Charge], _Key]) -> list[tuple[_Key, int]]:
    totals: dict[_Key, int] = defaultdict(int)
    for record in records:
        totals[key(record)] += int(record.tokens_total)
    return sorted(totals.items(), key=lambda kv: (-kv[1], str(kv[0])))

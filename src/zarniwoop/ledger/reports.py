"""The ledger's two window reports, both read through the one query engine (`ledger/query.py`):

    calls = await research_calls(db, SearchScope("acme", "review"), since=parse_since("24h"))
    calls["rows"][0]  # {"instance": "openalex", "protocol": "openalex", "modality": "ACADEMIC",
                      #  "calls": 12, "hits": 96, "failures": 1, "p50Ms": 310, "p95Ms": 802}
    board = await llm_dashboard(db, "acme", budgets=budgets, directory=directory, account="mike")

`research_calls` is the body of `zarniwoop usage` and `GET /v1/usage` (`views/usage.py` puts each
endpoint's quota beside its row: quotas are the dispatcher's, above this floor). `llm_dashboard`
is seed 002 §9 as JSON — today and this month, totals against the limit, by project, provider
(with the key's source), account and model, estimated cost, and a bar per quota line — the `llm`
section of `GET /v1/usage` and `zarniwoop llm usage --json`. Answered calls and the ones their
client abandoned count (`ok`, `cancelled`: an abandoned call spent tokens too, `llm/settlement.py`),
as in the timeseries (`ledger/series.py`).
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from ..limits.clock import iso_utc
from ..limits.token_budgets import QuotaLine, buckets_for
from .query import percentile, select, usd_total
from .tables import LLM_USAGE, RESEARCH_CALLS, iso_epoch

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..limits.token_budgets import TokenBudgets
    from ..storage.db import Database
    from ..tenancy.accounts import OrgDirectory, OrgUnit
    from .audit import ZarniwoopUsageCounter

CHARGED = "outcome IN ('ok', 'cancelled')"
"""The LLM calls that spent tokens: answered, or abandoned by their client and charged what the
upstream produced."""


async def research_calls(
    db: Database,
    scope: SearchScope,
    *,
    since: float,
    until: float | None = None,
    audit: ZarniwoopUsageCounter | None = None,
) -> dict[str, Any]:
    """Calls, hits, failures and p50/p95 latency per instance and modality of a scope's provider calls."""
    until = time.time() if until is None else until
    if audit is not None:
        # This process's latest calls belong in its own report; if the database cannot take them,
        # the report shows what it has (the counter logs the outage).
        with contextlib.suppress(Exception):
            await audit.flush(orphans=False)
    rows = await select(
        db,
        RESEARCH_CALLS,
        ("instance_id", "protocol", "modality", "hit_count", "ok", "duration_ms"),
        {"tenant": scope.tenant, "project": scope.project},
        since=since,
        until=until,
    )
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
    out_rows = []
    for key in sorted(groups):
        ordered = sorted(durations[key])
        out_rows.append(
            {**groups[key], "p50Ms": percentile(ordered, 0.50), "p95Ms": percentile(ordered, 0.95)}
        )
    return {
        "scope": {"tenant": scope.tenant, "project": scope.project},
        "since": iso_utc(since),
        "until": iso_utc(until),
        "rows": out_rows,
        "totals": {key: sum(g[key] for g in out_rows) for key in ("calls", "hits", "failures")},
    }


class _Charge(NamedTuple):
    """The columns of one charged LLM call a dashboard adds up."""

    project: str | None
    account: str | None
    provider: str
    credential_source: str
    instance: str
    model: str
    tokens_total: int
    cost_usd: float | None
    created_at: str


async def llm_dashboard(
    db: Database,
    tenant: str,
    *,
    budgets: TokenBudgets,
    directory: OrgDirectory,
    account: str | None = None,
    project: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Seed 002 §9 as JSON for the tenant, one account or one project: today and this month."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    buckets = dict(buckets_for(now))
    rows = await select(
        db,
        LLM_USAGE,
        (*_Charge._fields[:6], "tokens_input + tokens_output", "cost_usd", "created_at"),
        {"tenant": tenant, "account": account, "project": project},
        since=iso_epoch(now.strftime("%Y-%m-01")),
        condition=CHARGED,
        newest_first=True,
    )
    records = [_Charge(*row) for row in rows]
    today = [r for r in records if r.created_at[:10] == buckets["daily"]]
    subject_level, subject_owner = (
        ("account", account) if account else ("project", project) if project else ("tenant", "_tenant")
    )
    subject_unit = directory.unit(tenant, subject_level, subject_owner)
    quota = subject_unit.llm.quota if subject_unit is not None else None

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
    statuses = await budgets.status(tenant, lines) if lines else []
    project_limits = {
        s.line.owner: s for s in statuses if s.line.level == "project" and s.line.period == "monthly"
    }

    def period_view(name: str, items: list[_Charge], limit: int | None) -> dict[str, Any]:
        total = sum(r.tokens_total for r in items)
        return {
            "period": name,
            "bucket": buckets[name],
            "totalTokens": total,
            "limit": limit,
            "percent": _pct(total, limit),
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
                {"account": key, "tokens": tokens}
                for key, tokens in _sum_by(items, lambda r: r.account or "-")
            ],
            "byModel": [
                {"instance": key[0], "model": key[1], "tokens": tokens}
                for key, tokens in _sum_by(items, lambda r: (r.instance, r.model))
            ],
            "estimatedCostUsd": usd_total(r.cost_usd for r in items),
            "unpricedCalls": sum(1 for r in items if r.cost_usd is None),
        }

    return {
        "tenant": tenant,
        "scope": {"level": subject_level, "name": None if subject_level == "tenant" else subject_owner},
        "generatedAt": now.isoformat(timespec="seconds"),
        "today": period_view("daily", today, quota.daily_tokens if quota else None),
        "month": period_view("monthly", records, quota.monthly_tokens if quota else None),
        "quotas": [s.to_json() for s in statuses],
    }


def _units_in_view(
    directory: OrgDirectory,
    tenant: str,
    account: str | None,
    project: str | None,
    records: Iterable[_Charge],
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


def _sum_by(records: Iterable[_Charge], key: Callable[[_Charge], _Key]) -> list[tuple[_Key, int]]:
    totals: dict[_Key, int] = defaultdict(int)
    for record in records:
        totals[key(record)] += int(record.tokens_total)
    return sorted(totals.items(), key=lambda kv: (-kv[1], str(kv[0])))


def _pct(used: int, limit: int | None) -> float | None:
    return None if not limit else round(100.0 * used / limit, 2)

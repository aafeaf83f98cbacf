"""Usage records (seed 002 §5) and the usage dashboard (§9).

Every LLM call — successful, failed or blocked by a budget — leaves one `llm_usage_records` row
with the account, project, team and tenant it ran under, the provider, instance and model that
answered, the tokens, the cost from the catalog's pricing (NULL = "unpriced", never a guess),
where the key came from, how long it took, and every provider switch on the way.

    store = UsageStore(db)
    await store.record(record)
    board = await store.dashboard("acme", ledger=ledger, directory=directory, account="mike")

Records older than `ai.usage.retentionDays` (default 90) are purged by the one retention job
(`storage/retention.py`, rules from `runtime.retention_rules`).
"""

from __future__ import annotations

import json
import logging
import secrets
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ..observability.outage import OutageLog
from .failover import AttemptRecord, Switch

if TYPE_CHECKING:
    from ..limits.token_budgets import TokenBudgets
    from ..storage.db import Database
    from ..tenancy.accounts import OrgDirectory, OrgUnit

log = logging.getLogger(__name__)

RETENTION_KEY = "ai.usage.retentionDays"
DEFAULT_RETENTION_DAYS = 90

_COLUMNS = (
    "id, tenant, account, project, team, session_id, think_process_id, node_id, provider, instance, model, purpose, "
    "tokens_input, tokens_output, tokens_total, cost_usd, credential_source, duration_ms, outcome, error, failover, "
    "attempts, created_at"
)
_COLUMN_NAMES = tuple(name.strip() for name in _COLUMNS.split(","))


def new_usage_id() -> str:
    return "usage_" + secrets.token_hex(8)


@dataclass(frozen=True, slots=True)
class UsageRecord:
    tenant: str
    account: str | None
    project: str | None
    team: str | None
    provider: str
    instance: str
    model: str
    purpose: str
    tokens_input: int
    tokens_output: int
    cost_usd: float | None
    credential_source: str
    duration_ms: int
    outcome: str = "ok"
    """`ok`, `error` (every provider failed, or one failed midway: its tokens are charged), `blocked`
    (a budget refused the call) or `cancelled` (the client went away or a deadline cut it; charged
    what the upstream produced, `llm/settlement.py`)."""
    error: str | None = None
    failover: tuple[Switch, ...] = ()
    attempts: tuple[AttemptRecord, ...] = ()
    session_id: str | None = None
    think_process_id: str | None = None
    node_id: str | None = None
    id: str = field(default_factory=new_usage_id)
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))

    @property
    def tokens_total(self) -> int:
        return self.tokens_input + self.tokens_output

    def to_json(self) -> dict[str, Any]:
        """The seed's fields, camelCase (DESIGN §3); `costUsd: null` means unpriced."""
        return {
            "id": self.id,
            "accountId": self.account,
            "projectId": self.project,
            "teamId": self.team,
            "tenantId": self.tenant,
            "sessionId": self.session_id,
            "thinkProcessId": self.think_process_id,
            "nodeId": self.node_id,
            "provider": self.provider,
            "instance": self.instance,
            "model": self.model,
            "purpose": self.purpose,
            "tokensInput": self.tokens_input,
            "tokensOutput": self.tokens_output,
            "tokensTotal": self.tokens_total,
            "costUsd": self.cost_usd,
            "priced": self.cost_usd is not None,
            "credentialSource": self.credential_source,
            "durationMs": self.duration_ms,
            "outcome": self.outcome,
            "error": self.error,
            "failover": [s.to_json() for s in self.failover],
            "attempts": [a.to_json() for a in self.attempts],
            "timestamp": self.created_at,
        }

    def row(self) -> tuple[Any, ...]:
        """The values of `_COLUMNS`, in that order."""
        return (
            self.id,
            self.tenant,
            self.account,
            self.project,
            self.team,
            self.session_id,
            self.think_process_id,
            self.node_id,
            self.provider,
            self.instance,
            self.model,
            self.purpose,
            self.tokens_input,
            self.tokens_output,
            self.tokens_total,
            self.cost_usd,
            self.credential_source,
            self.duration_ms,
            self.outcome,
            self.error,
            json.dumps([s.to_json() for s in self.failover]),
            json.dumps([a.to_json() for a in self.attempts]),
            self.created_at,
        )

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> UsageRecord:
        values = dict(zip(_COLUMN_NAMES, row, strict=True))
        return cls(
            id=values["id"],
            tenant=values["tenant"],
            account=values["account"],
            project=values["project"],
            team=values["team"],
            session_id=values["session_id"],
            think_process_id=values["think_process_id"],
            node_id=values["node_id"],
            provider=values["provider"],
            instance=values["instance"],
            model=values["model"],
            purpose=values["purpose"],
            tokens_input=int(values["tokens_input"]),
            tokens_output=int(values["tokens_output"]),
            cost_usd=None if values["cost_usd"] is None else float(values["cost_usd"]),
            credential_source=values["credential_source"],
            duration_ms=int(values["duration_ms"]),
            outcome=values["outcome"],
            error=values["error"],
            failover=tuple(
                Switch(from_instance=s["from"], to_instance=s["to"], reason=s["reason"])
                for s in json.loads(values["failover"])
            ),
            attempts=tuple(_attempt_from_json(a) for a in json.loads(values["attempts"])),
            created_at=values["created_at"],
        )


def _attempt_from_json(a: dict[str, Any]) -> AttemptRecord:
    return AttemptRecord(
        instance=a["instance"],
        model=a["model"],
        outcome=a["outcome"],
        error=a.get("error"),
        status=a.get("status"),
        duration_ms=a.get("durationMs", 0),
        waited_ms=a.get("waitedMs", 0),
    )


LEDGER = "llm_usage_records"
INSERT_SQL = (
    f"INSERT INTO llm_usage_records ({_COLUMNS}) VALUES ({', '.join('?' * 23)}) ON CONFLICT (id) DO NOTHING"
)
"""Idempotent: a record spooled during an outage may be replayed after it was written."""

SpoolRows = Callable[[str, Sequence[Sequence[Any]]], None]


class UsageStore:
    """The LLM usage ledger. `spool`: where a record goes when the database cannot take it (the
    audit spool, `ZarniwoopUsageCounter.spool_rows`, which inserts it once the database is back)."""

    def __init__(self, db: Database, *, spool: SpoolRows | None = None) -> None:
        self.db = db
        self.spool = spool
        self.outage = OutageLog(log, "LLM usage database")

    async def record(self, record: UsageRecord) -> None:
        try:
            await self.db.execute(INSERT_SQL, record.row())
        except Exception as exc:
            if self.spool is None:
                raise
            self.spool(LEDGER, [record.row()])  # raises OSError if the disk cannot take it either
            self.outage.failed(exc, "usage records are spooled and written when it is back")
        else:
            self.outage.recovered()

    async def get(self, usage_id: str) -> UsageRecord | None:
        row = await self.db.fetchone(f"SELECT {_COLUMNS} FROM llm_usage_records WHERE id = ?", (usage_id,))
        return UsageRecord.from_row(row) if row else None

    async def query(
        self,
        tenant: str,
        *,
        since: str | None = None,
        account: str | None = None,
        project: str | None = None,
        limit: int | None = None,
    ) -> list[UsageRecord]:
        sql = f"SELECT {_COLUMNS} FROM llm_usage_records WHERE tenant = ?"
        params: list[Any] = [tenant]
        if since is not None:
            sql += " AND created_at >= ?"
            params.append(since)
        if account is not None:
            sql += " AND account = ?"
            params.append(account)
        if project is not None:
            sql += " AND project = ?"
            params.append(project)
        sql += " ORDER BY created_at DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [UsageRecord.from_row(r) for r in await self.db.fetchall(sql, params)]

    async def dashboard(
        self,
        tenant: str,
        *,
        ledger: TokenBudgets,
        directory: OrgDirectory,
        account: str | None = None,
        project: str | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Seed 002 §9 as JSON: today and this month — totals against the limit, by project, by
        provider (with the key's source), by account, estimated cost — and a bar per quota line."""
        from ..limits.token_budgets import QuotaLine, buckets_for

        now = (now or datetime.now(UTC)).astimezone(UTC)
        buckets = dict(buckets_for(now))
        month_start = now.strftime("%Y-%m-01")
        records = [
            r
            for r in await self.query(tenant, since=month_start, account=account, project=project)
            if r.outcome in ("ok", "cancelled")  # an abandoned call spent tokens too (settlement.py)
        ]
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
        statuses = await ledger.status(tenant, lines) if lines else []
        project_limits = {
            s.line.owner: s for s in statuses if s.line.level == "project" and s.line.period == "monthly"
        }

        def period_view(name: str, items: list[UsageRecord], limit: int | None) -> dict[str, Any]:
            total = sum(r.tokens_total for r in items)
            priced = [r.cost_usd for r in items if r.cost_usd is not None]
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
                "estimatedCostUsd": round(sum(priced), 6),
                "unpricedCalls": len(items) - len(priced),
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
    records: Iterable[UsageRecord],
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


def _sum_by(records: Iterable[UsageRecord], key: Callable[[UsageRecord], _Key]) -> list[tuple[_Key, int]]:
    totals: dict[_Key, int] = defaultdict(int)
    for record in records:
        totals[key(record)] += record.tokens_total
    return sorted(totals.items(), key=lambda kv: (-kv[1], str(kv[0])))


def _pct(used: int, limit: int | None) -> float | None:
    return None if not limit else round(100.0 * used / limit, 2)


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

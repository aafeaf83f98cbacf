"""`UsageLedger`: both usage ledgers of one database behind one interface — the two writers and
every usage report. The runtime builds one (`Runtime.ledger`); the LLM manager writes through
`ledger.llm`, the dispatcher through `ledger.calls` (its observer), and the usage view, the CLI
`usage` commands, `GET /v1/usage`, `GET /v1/usage/timeseries` and the console's charts all read
through it, and it reads through the one query engine (`ledger/query.py`).

    ledger = UsageLedger(db, ZarniwoopUsageCounter(db, home / "spool"))
    await ledger.llm.record(record)                     # one LLM call's charge, in its call
    await ledger.research(scope, since=parse_since("24h"))
    await ledger.llm_dashboard("acme", budgets=budgets, directory=directory, account="mike")
    await ledger.timeseries("llm", scope, since=since, until=now, bucket="day", by="model")
"""

from __future__ import annotations

import contextlib
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from ..limits.clock import iso_utc
from ..limits.token_budgets import buckets_for
from .llm_store import UsageStore
from .query import select
from .reports import CALL_COLUMNS, CHARGE_COLUMNS, CHARGED, Charge, call_groups, period_view, quota_lines
from .series import LLM, RESEARCH, timeseries
from .tables import LLM_USAGE, RESEARCH_CALLS, iso_epoch

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..limits.budgets import Budgets
    from ..storage.db import Database
    from ..tenancy.accounts import OrgDirectory
    from .audit import ZarniwoopUsageCounter

Kind = Literal["research", "llm"]


class UsageLedger:
    """The writers and the reports of `research_call_records` and `llm_usage_records`.

    Args:
        db: the database both tables live in.
        calls: the provider-call writer and the one spool (None: no audit log is attached; LLM
            usage is still recorded, without a spool to fall back on, and search reports are empty).
    """

    def __init__(self, db: Database, calls: ZarniwoopUsageCounter | None) -> None:
        self.db = db
        self.calls = calls
        self.llm = UsageStore(db, spool=None if calls is None else calls.spool_rows)

    @property
    def enabled(self) -> bool:
        """Whether provider calls are recorded (an audit log is attached)."""
        return self.calls is not None

    async def _caught_up(self) -> None:
        """This process's latest calls belong in its own reports; if the database cannot take
        them, a report shows what it has (the counter logs the outage)."""
        if self.calls is not None:
            with contextlib.suppress(Exception):
                await self.calls.flush(orphans=False)

    async def research(
        self, scope: SearchScope, *, since: float, until: float | None = None
    ) -> dict[str, Any]:
        """Calls, hits, failures and p50/p95 latency per instance and modality of a scope's provider
        calls, `since <= start < until` (epoch seconds; `until` defaults to now)."""
        until = time.time() if until is None else until
        await self._caught_up()
        filters = {"tenant": scope.tenant, "project": scope.project}
        rows = await select(self.db, RESEARCH_CALLS, CALL_COLUMNS, filters, since=since, until=until)
        groups, totals = call_groups(rows)
        return {
            "scope": filters,
            "since": iso_utc(since),
            "until": iso_utc(until),
            "rows": groups,
            "totals": totals,
        }

    async def llm_dashboard(
        self,
        tenant: str,
        *,
        budgets: Budgets,
        directory: OrgDirectory,
        account: str | None = None,
        project: str | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Seed 002 §9 as JSON for the tenant, one account or one project: today and this month —
        totals against the limit, by project, provider (with the key's source), account and model,
        estimated cost — and a bar per quota line (`budgets` reads them, `directory` names them)."""
        now = (now or datetime.now(UTC)).astimezone(UTC)
        buckets = dict(buckets_for(now))
        rows = await select(
            self.db,
            LLM_USAGE,
            CHARGE_COLUMNS,
            {"tenant": tenant, "account": account, "project": project},
            since=iso_epoch(now.strftime("%Y-%m-01")),
            condition=CHARGED,
        )
        records = [Charge(*row) for row in rows]
        today = [r for r in records if r.created_at[:10] == buckets["daily"]]
        level, owner = (
            ("account", account) if account else ("project", project) if project else ("tenant", "_tenant")
        )
        unit = directory.unit(tenant, level, owner)
        quota = unit.llm.quota if unit is not None else None
        lines = quota_lines(directory, tenant, account, project, records)
        statuses = await budgets.status(tenant, lines) if lines else []
        project_limits = {
            s.line.owner: s for s in statuses if s.line.level == "project" and s.line.period == "monthly"
        }
        return {
            "tenant": tenant,
            "scope": {"level": level, "name": None if level == "tenant" else owner},
            "generatedAt": now.isoformat(timespec="seconds"),
            "today": period_view(
                "daily", buckets["daily"], today, quota.daily_tokens if quota else None, project_limits
            ),
            "month": period_view(
                "monthly",
                buckets["monthly"],
                records,
                quota.monthly_tokens if quota else None,
                project_limits,
            ),
            "quotas": [s.to_json() for s in statuses],
        }

    async def timeseries(
        self,
        kind: Kind,
        scope: SearchScope,
        *,
        since: float,
        until: float,
        bucket: str,
        by: str | None = None,
        account: str | None = None,
        project: str | None = None,
    ) -> dict[str, Any]:
        """Per UTC hour or day (`ledger/series.py`): the provider calls of `scope` by instance (the
        default) or modality (`kind="research"`; empty, its parameters checked, when no audit log
        is attached), or the LLM tokens and cost of its tenant, narrowed to `account` and/or
        `project`, by project (the default), account, model or provider (`kind="llm"`)."""
        filters: dict[str, str | None]
        if kind == "research":
            if self.enabled:
                await self._caught_up()
            spec, filters = RESEARCH, {"tenant": scope.tenant, "project": scope.project}
        else:
            spec, filters = LLM, {"tenant": scope.tenant, "project": project, "account": account}
        return await timeseries(
            self.db,
            spec,
            filters,
            since=since,
            until=until,
            bucket=bucket,
            by=by or spec.default_by,
            query=kind == "llm" or self.enabled,
        )

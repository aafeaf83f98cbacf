"""`UsageLedger`: both usage ledgers of one database behind one interface — the two writers and
every usage report. The runtime builds one (`Runtime.ledger`); the LLM manager writes through
`ledger.llm`, the dispatcher through `ledger.calls` (its observer), and the usage view, the CLI
`usage` commands, `GET /v1/usage`, `GET /v1/usage/timeseries` and the console's charts all read
through it.

    ledger = UsageLedger(db, ZarniwoopUsageCounter(db, home / "spool"))
    await ledger.llm.record(record)                     # one LLM call's charge, in its call
    await ledger.research(scope, since=parse_since("24h"))
    await ledger.llm_dashboard("acme", budgets=budgets, directory=directory, account="mike")
    await ledger.timeseries("llm", scope, since=since, until=now, bucket="day", by="model")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from .llm_store import UsageStore
from .reports import llm_dashboard, research_calls
from .series import llm_timeseries, research_timeseries

if TYPE_CHECKING:
    from datetime import datetime

    from ..contract.query import SearchScope
    from ..limits.token_budgets import TokenBudgets
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

    async def research(
        self, scope: SearchScope, *, since: float, until: float | None = None
    ) -> dict[str, Any]:
        """Calls, hits, failures and p50/p95 per instance and modality (`ledger/reports.py`)."""
        return await research_calls(self.db, scope, since=since, until=until, audit=self.calls)

    async def llm_dashboard(
        self,
        tenant: str,
        *,
        budgets: TokenBudgets,
        directory: OrgDirectory,
        account: str | None = None,
        project: str | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """LLM tokens today and this month against the limits (`ledger/reports.py`)."""
        return await llm_dashboard(
            self.db, tenant, budgets=budgets, directory=directory, account=account, project=project, now=now
        )

    async def timeseries(
        self,
        kind: Kind,
        scope: SearchScope,
        *,
        since: float,
        until: float,
        bucket: str,
        by: str,
        account: str | None = None,
        project: str | None = None,
    ) -> dict[str, Any]:
        """Provider calls of `scope` (`kind="research"`) or LLM tokens of its tenant, narrowed to
        `account` and/or `project` (`kind="llm"`), per bucket (`ledger/series.py`)."""
        if kind == "research":
            return await research_timeseries(
                self.db,
                scope,
                since=since,
                until=until,
                bucket=bucket,
                by=by,
                audit=self.calls,
                query=self.enabled,
            )
        return await llm_timeseries(
            self.db,
            scope.tenant,
            since=since,
            until=until,
            bucket=bucket,
            by=by,
            account=account,
            project=project,
        )

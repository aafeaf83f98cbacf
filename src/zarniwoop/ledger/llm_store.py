"""The ledger's writer of LLM usage (seed 002 §5): `UsageStore`, one `llm_usage_records` row per
LLM call — successful, failed or blocked by a budget.

    store = UsageStore(db, spool=counter.spool_rows)
    await store.record(record)              # in the call, before the answer: it is the receipt
    await store.charges.charge(budgets, hold, tokens, record)   # with the call's settle, batched
    await store.get(record.id)              # read back by `usage_id`

Unlike a provider call (spooled, then inserted in batches by `ledger/audit.py`), an LLM usage
record is written in its call — in the budgets' transaction where they share the database, with
the charges of the calls finishing at the same moment (`charges.py`) — so a budget reading never
lags the records behind it. When the database cannot take it, the row goes to
the one audit spool and its flusher inserts it once the database is back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..observability.outage import OutageLog
from .charges import ChargeQueue
from .query import select
from .records import UsageRecord
from .tables import LLM_USAGE, iso_epoch

if TYPE_CHECKING:
    from ..storage.db import Database

log = logging.getLogger(__name__)

SpoolRows = Callable[[str, Sequence[Sequence[Any]]], None]


class UsageStore:
    """The LLM usage ledger. `spool`: where a record goes when the database cannot take it (the
    audit spool, `ZarniwoopUsageCounter.spool_rows`, which inserts it once the database is back)."""

    def __init__(self, db: Database, *, spool: SpoolRows | None = None) -> None:
        self.db = db
        self.spool = spool
        self.outage = OutageLog(log, "LLM usage database")
        self.charges = ChargeQueue(self)
        """Where a call's settle and record go together (the group commit, `charges.py`)."""

    async def record(self, record: UsageRecord) -> None:
        try:
            await self.db.execute(LLM_USAGE.insert_sql, record.row())
        except Exception as exc:
            if self.spool is None:
                raise
            self.spool(LLM_USAGE.name, [record.row()])  # raises OSError if the disk cannot take it either
            self.outage.failed(exc, "usage records are spooled and written when it is back")
        else:
            self.outage.recovered()

    async def record_many(self, records: Sequence[UsageRecord]) -> None:
        """Several records in one statement (the gateway's group commit); if the database refuses
        it, each is written (or spooled) on its own, so one bad row never takes the others with it."""
        if len(records) == 1:
            await self.record(records[0])
            return
        rows = [record.row() for record in records]
        try:
            await self.db.execute(LLM_USAGE.insert_many_sql(len(rows)), [v for row in rows for v in row])
        except Exception:
            for record in records:
                await self.record(record)
        else:
            self.outage.recovered()

    async def get(self, usage_id: str) -> UsageRecord | None:
        rows = await select(self.db, LLM_USAGE, LLM_USAGE.columns, {"id": usage_id})
        return UsageRecord.from_row(rows[0]) if rows else None

    async def query(
        self,
        tenant: str,
        *,
        since: str | None = None,
        account: str | None = None,
        project: str | None = None,
        limit: int | None = None,
    ) -> list[UsageRecord]:
        """The tenant's records since an ISO date or moment, newest first."""
        rows = await select(
            self.db,
            LLM_USAGE,
            LLM_USAGE.columns,
            {"tenant": tenant, "account": account, "project": project},
            since=None if since is None else iso_epoch(since),
            newest_first=True,
            limit=limit,
        )
        return [UsageRecord.from_row(row) for row in rows]

"""The group commit of LLM calls' charges (issue 42): each call's settle (its budget hold released,
its real usage charged) and its usage record wait in a queue; one writer takes every charge queued
and writes them at once — one write batch of the storage with one DELETE of the holds and one upsert
of the counters (`Budgets.settle_many`) and one INSERT of the records (`UsageStore.record_many`) —
then hands each call its own statuses.

    statuses = await usage.charges.charge(budgets, hold, 3_340, record)   # committed when it returns

Durability: a call returns only once its charge is committed — it waits for its batch — so nothing
the caller was answered about can be lost with the process, and a record read by `usage_id` right
after the call is there. The writer is a task of its own: a caller cancelled while it waits does not
cancel the write. Concurrent calls share one commit, so under load the bookkeeping per call shrinks
(one transaction, three statements, for every call finishing in the same turn of the event loop).

A batch the database refuses as a whole is written charge by charge, each failure isolated
(`_charge_one`): a record the database refuses is undone alone and spooled, the charge stands; a
database that cannot take the write at all gets the two apart, as each handles an outage (the
budgets log and let the hold lapse, the record is spooled); a settle failing for any other reason
is logged and its hold given back rather than left for its TTL (issue 43). `charge` never raises.
`flush` waits for the writer (shutdown).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..contract.errors import DatabaseUnavailableError

if TYPE_CHECKING:
    from ..limits.budgets import Budgets, Hold, LineStatus
    from .llm_store import UsageStore
    from .records import UsageRecord

log = logging.getLogger(__name__)

MAX_BATCH = 200
"""Charges written in one batch at most (the records' INSERT stays far below SQLite's 32,766
parameters)."""


@dataclass(frozen=True, slots=True)
class _Queued:
    budgets: Budgets
    hold: Hold | None
    tokens: int
    record: UsageRecord
    done: asyncio.Future[list[LineStatus]]


class ChargeQueue:
    """The charges of one usage store waiting for their commit (see the module)."""

    def __init__(self, usage: UsageStore) -> None:
        self._usage = usage
        self._queue: list[_Queued] = []
        self._writer: asyncio.Task[None] | None = None

    async def charge(
        self, budgets: Budgets, hold: Hold | None, tokens: int, record: UsageRecord
    ) -> list[LineStatus]:
        """Settle `hold` (None: the local free tier holds nothing) with `tokens` and write `record`;
        each limited line's usage after it."""
        done: asyncio.Future[list[LineStatus]] = asyncio.get_running_loop().create_future()
        self._queue.append(_Queued(budgets, hold, tokens, record, done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._write_queued())
        return await done

    async def flush(self) -> None:
        """Wait until every queued charge is written."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)

    async def _write_queued(self) -> None:
        await asyncio.sleep(0)  # one more turn of the loop: the calls finishing in it join the batch
        while self._queue:
            batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
            try:
                try:
                    statuses = await self._charge_batch(batch)
                except Exception:
                    statuses = [await self._charge_one(queued) for queued in batch]
            except BaseException:
                for queued in batch:  # the writer itself cancelled (its loop closing): none waits forever
                    queued.done.cancel()
                raise
            for queued, charged in zip(batch, statuses, strict=True):
                if not queued.done.done():  # its caller may have been cancelled meanwhile
                    queued.done.set_result(charged)

    async def _charge_batch(self, batch: Sequence[_Queued]) -> list[list[LineStatus]]:
        """Every charge of the batch in one write batch: where the budgets live in the same
        database (the embedded default) their statements join it, so the batch is one commit.
        Once the settles are through, the records never raise (each refused one is written or
        spooled alone): where the write batch is no transaction (PostgreSQL), settles already
        committed must not be written a second time by the fallback."""
        settled: dict[int, list[LineStatus]] = {}
        async with self._usage.db.write_batch():
            for budgets, group in _by_budgets(batch):
                held = [queued for queued in group if queued.hold is not None]
                statuses = await budgets.settle_many([(q.hold, q.tokens) for q in held if q.hold])
                settled.update(zip(map(id, held), statuses, strict=True))
            try:
                await self._usage.record_many([queued.record for queued in batch])
            except Exception:
                for queued in batch:
                    await self._record(queued.record)
        return [settled.get(id(queued), []) for queued in batch]

    async def _charge_one(self, queued: _Queued) -> list[LineStatus]:
        """One charge on its own (see the module: how each failure is kept from the others)."""
        budgets, hold, record = queued.budgets, queued.hold, queued.record
        if hold is not None:
            try:
                async with self._usage.db.write_batch():
                    statuses = await budgets.settle(hold, queued.tokens)
                    await self._record(record)
                return statuses
            except DatabaseUnavailableError:
                pass  # BEGIN or COMMIT failed: nothing of it was written
            except Exception:
                await _settle_failed(budgets, hold, record)
                await self._record(record)  # the batch's copy was rolled back with it
                return []
        try:
            statuses = await budgets.settle(hold, queued.tokens) if hold is not None else []
        except Exception:
            await _settle_failed(budgets, hold, record)
            statuses = []
        await self._record(record)
        return statuses

    async def _record(self, record: UsageRecord) -> None:
        """A record neither the database nor the spool can take is logged, never a failure of the
        call it records."""
        try:
            await self._usage.record(record)
        except Exception:
            log.exception("LLM usage record %s could not be written", record.id)


def _by_budgets(batch: Sequence[_Queued]) -> list[tuple[Budgets, list[_Queued]]]:
    """The batch's charges by the budgets that settle them (one store in a process, but a caller may
    pass another)."""
    groups: dict[int, tuple[Budgets, list[_Queued]]] = {}
    for queued in batch:
        groups.setdefault(id(queued.budgets), (queued.budgets, []))[1].append(queued)
    return list(groups.values())


async def _settle_failed(budgets: Budgets, hold: Hold | None, record: UsageRecord) -> None:
    log.exception("settling LLM call %s failed: its hold is given back, its record kept", record.id)
    if hold is None:
        return
    try:
        await budgets.release(hold)
    except Exception:
        log.exception("giving back the hold of LLM call %s failed: it lapses with its TTL", record.id)

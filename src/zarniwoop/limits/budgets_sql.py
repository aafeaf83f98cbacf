"""The budget engine in the database (SQLite, the embedded default; PostgreSQL alike).

Three tables hold every budget, calls and tokens (migration 0034 moved `quota_counters` in; it is
now a view): `llm_quota_usage` (charged, one row per counter), `llm_quota_holds` (in flight, with an
expiry), `llm_quota_alerts` (threshold notices sent). The names are the token budgets' of old:
operators' queries and the dashboards read them.

`reserve` / `spend` run in one write transaction (SQLite `BEGIN IMMEDIATE`, an advisory lock on
PostgreSQL, so separate processes serialise): one statement reads every limited line's usage and
holds, the check runs, one statement writes every hold (or charges every line). The bookkeeping
was a third of a gateway call's CPU when it took two reads and an insert per line. On PostgreSQL a
reservation is one statement instead (`reserve_pg.py`, migration 0041: one network round trip, not
five); with `token=` either form checks the caller's token in the same trip (`revocation.py`).
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..contract.errors import BudgetUnavailableError, DatabaseUnavailableError, RevokedTokenError
from ..storage.db import value_rows
from ..tenancy.tokens import LIVE_SQL, TokenStore
from .budgets import (
    HOLD_TTL_SECONDS,
    Bucket,
    BucketChoice,
    Budgets,
    Hold,
    LineStatus,
    QuotaLine,
    bucket_of,
    check_room,
    line_tenant,
    new_hold,
    outage_log,
    unavailable_error,
)
from .call_budgets import CallBudgets
from .clock import Clock
from .reserve_pg import reserve_in_one_statement

if TYPE_CHECKING:
    from ..storage.db import Database

log = logging.getLogger(__name__)

_Charge = tuple[Hold, Sequence[QuotaLine], int]
"""A hold, the lines it charges and the amount each is charged."""

_KEY = "tenant, unit, level, owner, subject, period, bucket"


def _key(tenant: str, line: QuotaLine, bucket: str) -> tuple[str, ...]:
    return (line_tenant(tenant, line), line.unit, line.level, line.owner, line.subject, line.period, bucket)


def _keys(hold: Hold, lines: Sequence[QuotaLine]) -> list[tuple[str, ...]]:
    """Each line's counter key in the hold's buckets (built once per statement, not per use)."""
    starts = {period: bucket.start for period, bucket in hold.by_period.items()}
    return [_key(hold.tenant, line, starts[line.period]) for line in lines]


class SQLBudgets(Budgets):
    """The `Budgets` of a database: one write transaction per reservation, holds that lapse."""

    def __init__(
        self,
        db: Database,
        *,
        clock: Clock | None = None,
        hold_ttl: float = HOLD_TTL_SECONDS,
        what: str | None = "budgets",
    ) -> None:
        self.db = db
        self.clock = clock or Clock()
        self.hold_ttl = hold_ttl
        self.outage = outage_log(log, "database", what)
        self.token_check = TokenStore(db).live

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.now(), UTC)

    def _closed(self, lines: Sequence[QuotaLine], exc: DatabaseUnavailableError) -> BudgetUnavailableError:
        """An unreachable database refuses the reservation (the store fails closed)."""
        self.outage.failed(exc, "budgets fail closed: calls under a budget are refused")
        return unavailable_error(lines, exc, "the database")

    async def _hold(self, hold: Hold, limited: Sequence[QuotaLine]) -> None:
        try:
            await self._hold_in_transaction(hold, limited)
        except DatabaseUnavailableError as exc:
            raise self._closed(limited, exc) from None
        self.outage.recovered()

    async def _hold_live(self, hold: Hold, limited: Sequence[QuotaLine], token: str) -> None:
        """The hold and the token's check in one round trip: the check is the transaction's first
        statement (SQLite), or the one function call's first step (PostgreSQL)."""
        try:
            await self._hold_in_transaction(hold, limited, token)
        except DatabaseUnavailableError as exc:
            raise self._closed(limited, exc) from None
        self.outage.recovered()

    async def _hold_in_transaction(
        self, hold: Hold, limited: Sequence[QuotaLine], token: str | None = None
    ) -> None:
        epoch = self.clock.now()
        keys = _keys(hold, limited)
        if self.db.dialect == "postgres":
            await reserve_in_one_statement(self.db, hold, limited, keys, epoch, epoch + self.hold_ttl, token)
            return
        async with self.db.transaction():
            if token is not None and await self.db.fetchone(LIVE_SQL, (token,)) is None:
                raise RevokedTokenError()
            check_room(await self._statuses(limited, hold, keys, epoch), hold.amount)
            params: list[object] = [hold.id, hold.amount, epoch + self.hold_ttl]
            for key in keys:
                params.extend(key)
            await self.db.execute(_hold_sql(len(keys)), params)

    async def _spend(self, hold: Hold) -> list[LineStatus]:
        try:
            statuses = await self._spend_in_transaction(hold)
        except DatabaseUnavailableError as exc:
            raise self._closed(hold.lines, exc) from None
        self.outage.recovered()
        return statuses

    async def _spend_in_transaction(self, hold: Hold) -> list[LineStatus]:
        limited = [line for line in hold.lines if line.limit is not None]
        async with self.db.transaction():
            if limited:
                statuses = await self._statuses(limited, hold, _keys(hold, limited), self.clock.now())
                check_room(statuses, hold.amount)
            return (await self._charge_many([(hold, hold.lines, hold.amount)]))[0]

    async def settle(self, hold: Hold, amount: int) -> list[LineStatus]:
        return (await self.settle_many([(hold, amount)]))[0]

    async def settle_many(self, settles: Sequence[tuple[Hold, int]]) -> list[list[LineStatus]]:
        """Every hold released and charged in one transaction of three statements, however many
        (the gateway's group commit): one DELETE, one upsert of the counters they share."""
        try:
            async with self.db.transaction():
                ids = [hold.id for hold, _ in settles]
                await self.db.execute(f"DELETE FROM llm_quota_holds WHERE id IN ({_marks(len(ids))})", ids)
                charged = await self._charge_many(
                    [(hold, hold.lines, max(0, amount)) for hold, amount in settles]
                )
                if secrets.randbelow(64) == 0:  # now and then, drop lapsed holds of crashed processes
                    await self.db.execute(
                        "DELETE FROM llm_quota_holds WHERE expires_at <= ?", (self.clock.now(),)
                    )
        except DatabaseUnavailableError as exc:
            self.outage.failed(exc, "usage not charged to the budgets; holds lapse by themselves")
            return [[] for _ in settles]
        return [[status for status in statuses if status.line.limit is not None] for statuses in charged]

    async def _charge_many(self, charges: Sequence[_Charge]) -> list[list[LineStatus]]:
        """Charge every line of every charge in one upsert: amounts on the same counter are summed
        first (PostgreSQL refuses an upsert that hits a row twice), and the usage it returns is
        unwound so that each charge sees its lines as if charged one after another, in order."""
        epoch = self.clock.now()
        keyed = [_keys(hold, lines) if lines else [] for hold, lines, _ in charges]
        totals: dict[tuple[str, ...], int] = {}
        for keys, (_, _, amount) in zip(keyed, charges, strict=True):
            for key in keys:
                totals[key] = totals.get(key, 0) + amount
        if not totals:
            return [[] for _ in charges]
        params: list[object] = []
        for key, amount in totals.items():
            params.extend((*key, amount, epoch))
        rows = await self.db.fetchall(
            f"INSERT INTO llm_quota_usage ({_KEY}, used, updated_at) VALUES "
            + value_rows(len(totals), 9)
            + f" ON CONFLICT ({_KEY}) DO UPDATE SET used = llm_quota_usage.used + excluded.used,"
            f" updated_at = excluded.updated_at RETURNING {_KEY}, used",
            params,
        )
        used = {tuple(map(str, row[:7])): int(row[7]) for row in rows}
        before = {key: used[key] - total for key, total in totals.items()}
        out: list[list[LineStatus]] = []
        for keys, (_, lines, amount) in zip(keyed, charges, strict=True):
            statuses = []
            for line, key in zip(lines, keys, strict=True):
                before[key] += amount
                statuses.append(LineStatus(line, key[6], before[key]))
            out.append(statuses)
        return out

    async def release(self, hold: Hold) -> None:
        try:
            await self.db.execute("DELETE FROM llm_quota_holds WHERE id = ?", (hold.id,))
        except DatabaseUnavailableError as exc:
            self.outage.failed(exc, "the hold lapses by itself")

    async def status(
        self, tenant: str, lines: Sequence[QuotaLine], *, buckets: BucketChoice = None
    ) -> list[LineStatus]:
        epoch = self.clock.now()
        hold = new_hold(tenant, lines, 0, epoch, buckets)
        try:
            return await self._statuses(lines, hold, _keys(hold, lines), epoch)
        except DatabaseUnavailableError as exc:
            self.outage.failed(exc, "budget status unknown")
            return []

    async def mark_alert(self, tenant: str, status: LineStatus, threshold: int) -> bool:
        count = await self.db.execute(
            f"INSERT INTO llm_quota_alerts ({_KEY}, threshold, sent_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (*_key(tenant, status.line, status.bucket), threshold, self.now().isoformat()),
        )
        return count > 0

    async def _statuses(
        self, lines: Sequence[QuotaLine], hold: Hold, keys: Sequence[tuple[str, ...]], epoch: float
    ) -> list[LineStatus]:
        """Used and held amounts of each line (`keys`: its counter's, in the hold's buckets), in order,
        read in one statement: a row per line, two scalar subqueries over its key, each key bound
        once (SQLite and PostgreSQL alike)."""
        if not lines:
            return []
        params: list[object] = [epoch]
        for key in keys:
            params.extend(key)
        rows = await self.db.fetchall(_status_sql(len(lines)), params)
        return [
            LineStatus(line, key[6], int(used or 0), int(held or 0))
            for line, key, (used, held) in zip(lines, keys, rows, strict=True)
        ]

    async def charge(
        self, tenant: str, line: QuotaLine, amount: int, *, bucket: str | Bucket | None = None
    ) -> None:
        """Add usage directly (imports, tests, the seed's "4.998M of 5M" starting point)."""
        start = bucket_of(line, bucket, self.clock.now()).start
        await self.db.execute(
            f"INSERT INTO llm_quota_usage ({_KEY}, used, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            f"ON CONFLICT ({_KEY}) DO UPDATE SET used = llm_quota_usage.used + excluded.used, "
            "updated_at = excluded.updated_at",
            (*_key(tenant, line, start), amount, self.clock.now()),
        )


@functools.cache
def _marks(count: int) -> str:
    return ", ".join("?" * count)


@functools.cache
def _hold_sql(count: int) -> str:
    """The INSERT of one hold's `count` rows, its id, amount and expiry bound once (then seven key
    parameters per line)."""
    keys = ", ".join(f"k.column{i}" for i in range(1, 8))
    return (
        f"INSERT INTO llm_quota_holds (id, {_KEY}, tokens, expires_at) SELECT ?, {keys}, "
        f"CAST(? AS BIGINT), CAST(? AS DOUBLE PRECISION) FROM (VALUES {value_rows(count, 7)}) AS k"
    )


_MATCH_KEY = " AND ".join(f"{column} = k.column{i}" for i, column in enumerate(_KEY.split(", "), start=2))
"""A counter's key equal to the row of `k`, the keys' VALUES (its first column is the line's place)."""


@functools.cache
def _status_sql(count: int) -> str:
    """The one statement `_statuses` runs for `count` lines: a row per line, in order, with its
    charged usage and the amount of its unexpired holds (the epoch for the holds, then seven key
    parameters per line)."""
    used = f"(SELECT used FROM llm_quota_usage WHERE {_MATCH_KEY})"
    held = f"(SELECT COALESCE(SUM(tokens), 0) FROM llm_quota_holds WHERE {_MATCH_KEY} AND expires_at > ?)"
    keys = ", ".join(f"({i}, ?, ?, ?, ?, ?, ?, ?)" for i in range(count))
    return f"SELECT {used}, {held} FROM (VALUES {keys}) AS k ORDER BY k.column1"


class SQLCallBudgets(CallBudgets):
    """Call budgets in the database (the keeper above reports its outages)."""

    def __init__(self, db: Database, *, clock: Clock | None = None) -> None:
        super().__init__(SQLBudgets(db, clock=clock, what=None))


__all__ = ["SQLBudgets", "SQLCallBudgets"]

"""Token budgets at every level, reserved before an LLM call and settled after it (seed 002 §3, §5).

A call's *quota lines* are one daily and one monthly line per level the call runs under
(account, project, team, tenant). Lines with a limit are checked; every line is charged, so
the dashboard shows usage at levels without a budget too ("53k / no project limit").

    hold = await ledger.reserve("acme", lines, 12_000)     # all levels at once, or QuotaExceededError
    ... the call ...
    statuses = await ledger.settle(hold, 3_340)             # release the hold, charge real usage

`reserve` is all-or-nothing across levels: inside one write transaction (SQLite `BEGIN
IMMEDIATE`, which also serialises separate processes) it reads each limited line's usage plus
the tokens other calls in flight hold, refuses if any line would pass its cap — the error names
the first such level in cascade order, "Project quota exhausted" — and otherwise records a hold on
every limited line. `settle` returns each limited line's charged usage after the call
(what the threshold notices read; `held` is not read there: 0). Holds carry an expiry, so a
crashed process's tokens come back by themselves.
Concurrent calls therefore never overspend: a budget that fits 20 calls runs exactly 20.

Vocabulary shared with the call budgets (`call_budgets`): `reserve` (all lines or none), `settle`
(release the hold, charge the real usage), `release` (a failed attempt gives its hold back),
`charge` (add usage without a check), `status`. Two stores: `SQLTokenBudgets` (here) and
`token_budgets_redis.RedisTokenBudgets`.

Outage policy (docs/robustness.md): token budgets fail closed. A `reserve` that cannot reach the
store raises `BudgetUnavailableError` (a `QuotaExceededError`: only the unlimited local candidates
may still serve; exit 4); a `settle` or `release` that cannot reach it is logged once and dropped
(the call already happened; its usage record still has it, and its hold lapses after
`HOLD_TTL_SECONDS`); `status` then reports nothing (no light-model switch on unknown numbers).
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Protocol

from ..contract.errors import BudgetUnavailableError, DatabaseUnavailableError, QuotaExceededError
from ..observability.outage import OutageLog
from ..tenancy.accounts import CASCADE
from .clock import Clock

if TYPE_CHECKING:
    from ..storage.db import Database
    from ..tenancy.accounts import CallScope

log = logging.getLogger(__name__)

PERIODS = ("daily", "monthly")
HOLD_TTL_SECONDS = 900.0
"""A hold outliving this is a crashed call; its tokens count again after it."""


@dataclass(frozen=True, slots=True)
class QuotaLine:
    level: str
    owner: str
    period: str
    limit: int | None
    notify_pct: int = 80
    light_pct: int = 95
    block_pct: int = 100

    @property
    def cap(self) -> int | None:
        """Tokens that may be used before calls are refused (the limit × block threshold)."""
        return None if self.limit is None else self.limit * self.block_pct // 100

    @property
    def label(self) -> str:
        return f"{self.level}/{self.owner}"


@dataclass(frozen=True, slots=True)
class LineStatus:
    line: QuotaLine
    bucket: str
    used: int
    held: int = 0

    @property
    def percent(self) -> float | None:
        if not self.line.limit:
            return None
        return 100.0 * self.used / self.line.limit

    @property
    def exhausted(self) -> bool:
        cap = self.line.cap
        return cap is not None and self.used >= cap

    def to_json(self) -> dict[str, object]:
        pct = self.percent
        return {
            "scope": self.line.label,
            "level": self.line.level,
            "owner": self.line.owner,
            "period": self.line.period,
            "bucket": self.bucket,
            "tokensUsed": self.used,
            "tokensHeld": self.held,
            "tokensLimit": self.line.limit,
            "percent": None if pct is None else round(pct, 2),
            # where the notice, the light-model switch and the block happen (percent of the limit)
            "thresholds": {
                "notify": self.line.notify_pct,
                "light": self.line.light_pct,
                "block": self.line.block_pct,
            },
        }


@dataclass(frozen=True, slots=True)
class Hold:
    id: str
    tenant: str
    lines: tuple[QuotaLine, ...]
    buckets: tuple[tuple[str, str], ...]
    """(period, bucket) at reservation time: a call crossing midnight is charged to the day it started."""
    tokens: int

    def bucket(self, period: str) -> str:
        return dict(self.buckets)[period]


def buckets_for(now: datetime) -> tuple[tuple[str, str], ...]:
    return _buckets(now.astimezone(UTC).date())


@functools.lru_cache(maxsize=4)
def _buckets(day: date) -> tuple[tuple[str, str], ...]:
    """Formatted once per day, not twice per call (`strftime` showed in the gateway's profile)."""
    return (("daily", day.strftime("%Y-%m-%d")), ("monthly", day.strftime("%Y-%m")))


def quota_lines(scope: CallScope) -> list[QuotaLine]:
    """Two lines (daily, monthly) per level of the call, limits from each level's `quota`."""
    lines = []
    for level, owner, unit in scope.levels():
        quota = unit.llm.quota if unit is not None else None
        for period in PERIODS:
            limit = None
            if quota is not None:
                limit = quota.daily_tokens if period == "daily" else quota.monthly_tokens
            if quota is not None:
                lines.append(
                    QuotaLine(level, owner, period, limit, quota.notify_pct, quota.light_pct, quota.block_pct)
                )
            else:
                lines.append(QuotaLine(level, owner, period, None))
    return lines


def max_tokens_cap(scope: CallScope) -> int | None:
    """The smallest `max_tokens_per_call` of any level (every level's limit holds)."""
    caps = [
        cfg.quota.max_tokens_per_call
        for cfg in (scope.config(level) for level in CASCADE)
        if cfg is not None and cfg.quota is not None and cfg.quota.max_tokens_per_call
    ]
    return min(caps) if caps else None


def exhausted_error(status: LineStatus, needed: int) -> QuotaExceededError:
    line = status.line
    return QuotaExceededError(
        line.level,
        f"{line.level.capitalize()} quota exhausted: {line.label} {line.period} "
        f"{status.used + status.held:,} of {line.limit:,} tokens used, this call needs up to {needed:,}",
    )


def unavailable_error(lines: Sequence[QuotaLine], exc: BaseException, store: str) -> BudgetUnavailableError:
    """The fail-closed refusal of a reservation whose store is unreachable (the first limited level)."""
    level = next((line.level for line in lines if line.limit is not None), "budget")
    return BudgetUnavailableError(
        level,
        f"{level.capitalize()} budget unavailable: {store} unreachable ({type(exc).__name__}); calls under "
        "a token budget are refused until it is back (token budgets fail closed)",
    )


class TokenBudgets(Protocol):
    """Atomic multi-level token budgets; SQL (SQLite/PostgreSQL) and Redis implement it."""

    async def reserve(self, tenant: str, lines: Sequence[QuotaLine], tokens: int) -> Hold: ...

    async def settle(self, hold: Hold, tokens: int) -> list[LineStatus]: ...

    async def release(self, hold: Hold) -> None: ...

    async def status(self, tenant: str, lines: Sequence[QuotaLine]) -> list[LineStatus]: ...

    async def mark_alert(self, tenant: str, status: LineStatus, threshold: int) -> bool:
        """Record that `threshold` % was announced for this line and bucket; False if it already was."""
        ...

    async def charge(self, tenant: str, line: QuotaLine, tokens: int, *, bucket: str | None = None) -> None:
        """Add usage directly (imports, tests)."""
        ...


class SQLTokenBudgets:
    """The budgets in the database: `llm_quota_usage` (charged) + `llm_quota_holds` (in flight)."""

    def __init__(
        self, db: Database, *, clock: Clock | None = None, hold_ttl: float = HOLD_TTL_SECONDS
    ) -> None:
        self.db = db
        self.clock = clock or Clock()
        self.hold_ttl = hold_ttl
        self.outage = OutageLog(log, "database (token budgets)")

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.now(), UTC)

    async def reserve(self, tenant: str, lines: Sequence[QuotaLine], tokens: int) -> Hold:
        try:
            hold = await self._reserve(tenant, lines, tokens)
        except DatabaseUnavailableError as exc:
            self.outage.failed(exc, "token budgets fail closed: calls under a budget are refused")
            raise unavailable_error(lines, exc, "the database") from None
        self.outage.recovered()
        return hold

    async def _reserve(self, tenant: str, lines: Sequence[QuotaLine], tokens: int) -> Hold:
        buckets = buckets_for(self.now())
        hold = Hold(secrets.token_hex(8), tenant, tuple(lines), buckets, tokens)
        limited = [line for line in lines if line.limit is not None]
        if not limited:
            return hold
        epoch = self.clock.now()
        # One statement reads every limited line and one writes every hold (not two reads and an
        # insert per line): the bookkeeping was a third of a gateway call's CPU. Same transaction,
        # same checks in cascade order, so the first level over its cap is still the one named.
        async with self.db.transaction():
            statuses = await self._statuses(
                tenant, [(line, hold.bucket(line.period)) for line in limited], epoch
            )
            for status in statuses:
                cap = status.line.cap
                assert cap is not None
                if status.used + status.held + tokens > cap:
                    raise exhausted_error(status, tokens)
            await self.db.execute(
                "INSERT INTO llm_quota_holds (id, tenant, level, owner, period, bucket, tokens, expires_at) "
                "VALUES " + _rows(len(limited), 8),
                [
                    value
                    for line in limited
                    for value in (
                        hold.id,
                        tenant,
                        line.level,
                        line.owner,
                        line.period,
                        hold.bucket(line.period),
                        tokens,
                        epoch + self.hold_ttl,
                    )
                ],
            )
        return hold

    async def settle(self, hold: Hold, tokens: int) -> list[LineStatus]:
        try:
            return await self._settle(hold, tokens)
        except DatabaseUnavailableError as exc:
            self.outage.failed(exc, "usage not charged to the budgets; holds lapse by themselves")
            return []

    async def _settle(self, hold: Hold, tokens: int) -> list[LineStatus]:
        epoch = self.clock.now()
        async with self.db.transaction():
            await self.db.execute("DELETE FROM llm_quota_holds WHERE id = ?", (hold.id,))
            charged: dict[tuple[str, str, str], int] = {}
            if hold.lines:
                # Every line charged in one upsert (the levels are distinct, so no row is hit twice,
                # which PostgreSQL would refuse), which returns each line's usage after it.
                rows = await self.db.fetchall(
                    "INSERT INTO llm_quota_usage (tenant, level, owner, period, bucket, used) VALUES "
                    + _rows(len(hold.lines), 6)
                    + " ON CONFLICT (tenant, level, owner, period, bucket) DO UPDATE SET used = llm_quota_usage.used + excluded.used"
                    " RETURNING level, owner, period, used",
                    [
                        value
                        for line in hold.lines
                        for value in (
                            hold.tenant,
                            line.level,
                            line.owner,
                            line.period,
                            hold.bucket(line.period),
                            max(0, tokens),
                        )
                    ],
                )
                charged = {
                    (str(level), str(owner), str(period)): int(used) for level, owner, period, used in rows
                }
            if secrets.randbelow(64) == 0:  # now and then, drop lapsed holds of crashed processes
                await self.db.execute("DELETE FROM llm_quota_holds WHERE expires_at <= ?", (epoch,))
        return [
            LineStatus(line, hold.bucket(line.period), charged[(line.level, line.owner, line.period)])
            for line in hold.lines
            if line.limit is not None
        ]

    async def release(self, hold: Hold) -> None:
        try:
            await self.db.execute("DELETE FROM llm_quota_holds WHERE id = ?", (hold.id,))
        except DatabaseUnavailableError as exc:
            self.outage.failed(exc, "the hold lapses by itself")

    async def status(self, tenant: str, lines: Sequence[QuotaLine]) -> list[LineStatus]:
        buckets = dict(buckets_for(self.now()))
        epoch = self.clock.now()
        try:
            return await self._statuses(tenant, [(line, buckets[line.period]) for line in lines], epoch)
        except DatabaseUnavailableError as exc:
            self.outage.failed(exc, "budget status unknown")
            return []

    async def mark_alert(self, tenant: str, status: LineStatus, threshold: int) -> bool:
        line = status.line
        count = await self.db.execute(
            "INSERT INTO llm_quota_alerts (tenant, level, owner, period, bucket, threshold, sent_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (
                tenant,
                line.level,
                line.owner,
                line.period,
                status.bucket,
                threshold,
                self.now().isoformat(),
            ),
        )
        return count > 0

    async def _statuses(
        self, tenant: str, lines: Sequence[tuple[QuotaLine, str]], epoch: float
    ) -> list[LineStatus]:
        """Used and held tokens of each `(line, bucket)`, in order, read in one statement (two
        scalar subqueries per line: SQLite and PostgreSQL alike) rather than two per line."""
        if not lines:
            return []
        params: list[object] = []
        for line, bucket in lines:
            key = (tenant, line.level, line.owner, line.period, bucket)
            params.extend(key)
            params.extend((*key, epoch))
        row = await self.db.fetchone(_status_sql(len(lines)), params)
        assert row is not None  # a SELECT without FROM always yields its one row
        return [
            LineStatus(line, bucket, int(row[2 * i] or 0), int(row[2 * i + 1] or 0))
            for i, (line, bucket) in enumerate(lines)
        ]

    async def charge(self, tenant: str, line: QuotaLine, tokens: int, *, bucket: str | None = None) -> None:
        """Add usage directly (imports, tests, the seed's "4.998M of 5M" starting point)."""
        bucket = bucket or dict(buckets_for(self.now()))[line.period]
        await self.db.execute(
            "INSERT INTO llm_quota_usage (tenant, level, owner, period, bucket, used) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (tenant, level, owner, period, bucket) DO UPDATE SET used = llm_quota_usage.used + excluded.used",
            (tenant, line.level, line.owner, line.period, bucket, tokens),
        )


@functools.cache
def _rows(count: int, width: int) -> str:
    """`(?, ?), (?, ?)` for a multi-row VALUES of `count` rows of `width` columns."""
    return ", ".join(["(" + ", ".join("?" * width) + ")"] * count)


@functools.cache
def _status_sql(count: int) -> str:
    """The one statement `_statuses` runs for `count` lines: per line, its charged usage and the
    tokens of its unexpired holds (five key parameters each, plus the epoch for the holds)."""
    used = "(SELECT used FROM llm_quota_usage WHERE tenant = ? AND level = ? AND owner = ? AND period = ? AND bucket = ?)"
    held = (
        "(SELECT COALESCE(SUM(tokens), 0) FROM llm_quota_holds WHERE tenant = ? AND level = ? AND owner = ? "
        "AND period = ? AND bucket = ? AND expires_at > ?)"
    )
    return "SELECT " + ", ".join([f"{used}, {held}"] * count)

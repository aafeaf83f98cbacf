"""Call budgets: a number of calls per UTC day or month, taken one call at a time, all or none.

    research.endpoint.serper-main.quota.daily: 2500      # calls per UTC day
    research.endpoint.serper-main.quota.monthly: 50000   # calls per UTC month

The search side's budgets (the dispatcher's `LocalQuotaGuard` decides which windows a call draws
on; this module keeps the counts). Vocabulary shared with the token budgets (`token_budgets`):

- `reserve`: take one call from every window, or from none (a call sent is a call billed, so a
  call budget is spent when reserved and has no `settle`);
- `charge`: add calls without a limit check (calls that happened while the store was away);
- `used`: the counts now.

Two stores: `SQLCallBudgets` (`quota_counters`: an IMMEDIATE transaction on SQLite, an
advisory-locked one on PostgreSQL, whose conditional upserts take a call from every window or roll
back) and `RedisCallBudgets` (one Lua script). 200 concurrent searches against a budget of 100
make exactly 100 upstream calls, across any number of processes sharing the store.

Outage policy (docs/robustness.md), in `CallBudgetKeeper`: call budgets fail *to the last counts
seen* — while the store is unreachable each process enforces the budgets from the last counts it
saw plus its own calls since, logs the outage once, and charges those calls to the store when it
is back. Searches keep working; the overshoot is bounded by what each process saw as remaining.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from ..contract.errors import QuotaExceededError
from ..observability.outage import OutageLog

if TYPE_CHECKING:
    from ..storage.db import Database
    from .redis_state import RedisState

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BudgetWindow:
    """One call budget in its current period: whose it is, which window, how big, when it resets."""

    pool_tenant: str
    pool_project: str
    period: str  # "day" | "month"
    window_start: str  # "2025-01-31" | "2025-01" (UTC)
    limit: int
    resets_at: float  # epoch seconds


WindowKey = tuple[str, str, str, str, str]


def window_key(subject: str, w: BudgetWindow) -> WindowKey:
    return (subject, w.pool_tenant, w.pool_project, w.period, w.window_start)


def current_window(period: str, now: float) -> tuple[str, float]:
    """`(window_start, resets_at)` of the UTC day or month containing `now`."""
    moment = datetime.fromtimestamp(now, UTC)
    if period == "day":
        start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
        return start.strftime("%Y-%m-%d"), start.timestamp() + 86400
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return start.strftime("%Y-%m"), following.timestamp()


class CallBudgets(Protocol):
    """A store of call counts; `subject` is what the calls go to (a provider instance id)."""

    async def reserve(self, subject: str, windows: Sequence[BudgetWindow], now: float) -> list[int] | None:
        """Take one call from every window, or from none: the new counts, or None when one had no room."""
        ...

    async def charge(self, subject: str, window: BudgetWindow, calls: int, now: float) -> None:
        """Count calls made while the store was unreachable (no limit check: they happened)."""
        ...

    async def used(self, subject: str, windows: Sequence[BudgetWindow]) -> list[int]: ...


_RESERVE_SQL = (
    "INSERT INTO quota_counters (tenant, project, instance_id, period, window_start, used, updated_at) "
    "VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT (tenant, project, instance_id, period, window_start) "
    "DO UPDATE SET used = quota_counters.used + 1, updated_at = excluded.updated_at "
    "WHERE quota_counters.used < ? RETURNING used"
)


class SQLCallBudgets:
    """Counters in `quota_counters` (the embedded default; PostgreSQL alike)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def reserve(self, subject: str, windows: Sequence[BudgetWindow], now: float) -> list[int] | None:
        counts = []
        try:
            async with self.db.transaction():
                for w in windows:
                    if w.limit <= 0:
                        raise QuotaExceededError(w.period)  # rolls the reservation transaction back
                    row = await self.db.fetchone(
                        _RESERVE_SQL,
                        (w.pool_tenant, w.pool_project, subject, w.period, w.window_start, now, w.limit),
                    )
                    if row is None:
                        raise QuotaExceededError(w.period)
                    counts.append(int(row[0]))
        except QuotaExceededError:
            return None
        return counts

    async def charge(self, subject: str, window: BudgetWindow, calls: int, now: float) -> None:
        w = window
        await self.db.execute(
            "INSERT INTO quota_counters (tenant, project, instance_id, period, window_start, used, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, project, instance_id, period, window_start) "
            "DO UPDATE SET used = quota_counters.used + excluded.used, updated_at = excluded.updated_at",
            (w.pool_tenant, w.pool_project, subject, w.period, w.window_start, calls, now),
        )

    async def used(self, subject: str, windows: Sequence[BudgetWindow]) -> list[int]:
        out = []
        for w in windows:
            row = await self.db.fetchone(
                "SELECT used FROM quota_counters WHERE tenant = ? AND project = ? AND instance_id = ? "
                "AND period = ? AND window_start = ?",
                (w.pool_tenant, w.pool_project, subject, w.period, w.window_start),
            )
            out.append(int(row[0]) if row else 0)
        return out


CALL_BUDGET_SCRIPT = """
local n = #KEYS
for i = 1, n do
  if tonumber(redis.call('GET', KEYS[i]) or '0') >= tonumber(ARGV[i]) then return 0 end
end
local counts = {}
for i = 1, n do
  counts[i] = redis.call('INCR', KEYS[i])
  redis.call('EXPIREAT', KEYS[i], ARGV[n + i])
end
return counts
"""


def _expire_at(window: BudgetWindow) -> int:
    return int(window.resets_at) + 3600  # an hour's grace for clock skew between replicas


class RedisCallBudgets:
    """Counters in Redis: one Lua script checks every window and increments all or none."""

    def __init__(self, state: RedisState) -> None:
        self.state = state
        self._reserve = state.script(CALL_BUDGET_SCRIPT)

    def _key(self, subject: str, w: BudgetWindow) -> str:
        return self.state.key("quota", w.pool_tenant, w.pool_project, subject, w.period, w.window_start)

    async def reserve(self, subject: str, windows: Sequence[BudgetWindow], now: float) -> list[int] | None:
        keys = [self._key(subject, w) for w in windows]
        expire_at = [_expire_at(w) for w in windows]
        granted = await self._reserve(keys=keys, args=[*(w.limit for w in windows), *expire_at])
        return [int(c) for c in granted] if isinstance(granted, list) else None

    async def charge(self, subject: str, window: BudgetWindow, calls: int, now: float) -> None:
        key = self._key(subject, window)
        async with self.state.client.pipeline(transaction=True) as pipe:
            pipe.incrby(key, calls)
            pipe.expireat(key, _expire_at(window))
            await pipe.execute()

    async def used(self, subject: str, windows: Sequence[BudgetWindow]) -> list[int]:
        if not windows:
            return []
        values = await self.state.client.mget([self._key(subject, w) for w in windows])
        return [int(v) if v is not None else 0 for v in values]


class CallBudgetKeeper:
    """A `CallBudgets` store with its outage policy: fail to the last counts seen (module docstring)."""

    def __init__(self, store: CallBudgets) -> None:
        self.store = store
        self.outage = OutageLog(log, "quota counter store")
        self._known: dict[WindowKey, int] = {}
        """Last count seen per (subject, pool, period, window): the basis while the store is down."""
        self._offline: dict[WindowKey, tuple[int, BudgetWindow]] = {}
        """Calls granted while the store was down, to charge to it when it is back."""

    async def reserve(self, subject: str, windows: Sequence[BudgetWindow], now: float) -> bool:
        """Take one call from every window, or none; False = a window had no room."""
        if not windows:
            return True
        try:
            await self._charge_offline(now)
            counts = await self.store.reserve(subject, windows, now)
        except Exception as exc:
            self.outage.failed(
                exc, "each process enforces the budgets from the last counts it saw until the store is back"
            )
            return self._reserve_offline(subject, windows)
        self.outage.recovered()
        if counts is None:
            return False
        if len(self._known) > 10_000:
            self._known.clear()
        for window, count in zip(windows, counts, strict=True):
            self._known[window_key(subject, window)] = count
        return True

    async def used(self, subject: str, windows: Sequence[BudgetWindow]) -> list[int]:
        """The counts now; during an outage this process's last known counts plus its own calls."""
        try:
            return await self.store.used(subject, windows)
        except Exception as exc:
            self.outage.failed(exc, "quota status shows this process's last known counts")
            return [self._offline_used(window_key(subject, w)) for w in windows]

    def _reserve_offline(self, subject: str, windows: Sequence[BudgetWindow]) -> bool:
        keys = [window_key(subject, w) for w in windows]
        if any(self._offline_used(k) >= w.limit for k, w in zip(keys, windows, strict=True)):
            return False
        for key, window in zip(keys, windows, strict=True):
            calls = self._offline.get(key, (0, window))[0]
            self._offline[key] = (calls + 1, window)
        return True

    def _offline_used(self, key: WindowKey) -> int:
        return self._known.get(key, 0) + self._offline.get(key, (0, None))[0]

    async def _charge_offline(self, now: float) -> None:
        """Charge the calls granted during an outage to the store (once, by one task)."""
        if not self._offline:
            return
        pending, self._offline = self._offline, {}
        items = list(pending.items())
        for index, (key, (calls, window)) in enumerate(items):
            try:
                await self.store.charge(key[0], window, calls, now)
            except BaseException:
                for later_key, value in items[index:]:
                    calls_now = self._offline.get(later_key, (0, value[1]))[0]
                    self._offline[later_key] = (calls_now + value[0], value[1])
                raise
            self._known[key] = self._known.get(key, 0) + calls


__all__ = [
    "CALL_BUDGET_SCRIPT",
    "BudgetWindow",
    "CallBudgetKeeper",
    "CallBudgets",
    "RedisCallBudgets",
    "SQLCallBudgets",
    "current_window",
    "window_key",
]

"""Provider quotas: locally tracked call budgets, merged with what providers report.

    research.endpoint.serper-main.quota.daily: 2500      # calls per UTC day
    research.endpoint.serper-main.quota.monthly: 50000   # calls per UTC month

Reserve before the call: `LocalQuotaGuard.reserve` atomically takes one call from every budget
of the instance, or none (an IMMEDIATE transaction on `quota_counters`, or one Lua script in
Redis), so 200 concurrent searches against a budget of 100 make exactly 100 upstream calls,
across any number of processes sharing the store. An exhausted instance is skipped as
`skipped_exhausted` — no cooldown — and comes back when its period rolls over.

A budget belongs to the scope level where it is set: in `(_system, _tenant)` it is one budget
for the whole deployment (the operator's key), in `(acme, _tenant)` acme's projects share it,
in `(acme, review)` it is that project's own.

Provider-reported quotas (`SearchPage.quota`, read from rate-limit headers, or an instance's
own `current_quota(scope)`) go through the `QuotaCache` for `research.quota.cache.ttlMinutes`
and merge in with `source: provider`; a provider that says a daily or monthly budget is spent
benches the instance (as exhausted) until its reset, or until the cache entry expires.

If the counter store is unreachable, searches keep working: each process enforces the budgets
from the last counts it saw plus its own calls since, logs the outage once, loudly, and adds
those calls to the shared counters when the store is back.
"""

from __future__ import annotations

import collections
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from ..config import keys as K
from ..contract.errors import ConfigError, QuotaExceededError
from ..contract.protocol import ReportsQuota
from ..contract.results import QuotaStatus
from ..observability.metrics import count_quota_lookup
from ..observability.outage import OutageLog
from .clock import Clock, iso_utc

if TYPE_CHECKING:
    from ..config.settings import ScopedSettings, SettingRow, SettingService
    from ..contract.enums import Modality
    from ..contract.protocol import ProviderInstance
    from ..contract.query import SearchScope
    from ..storage.db import Database
    from .redis_state import RedisState

log = logging.getLogger(__name__)

PERIODS: tuple[tuple[str, str], ...] = (("quota.daily", "day"), ("quota.monthly", "month"))
"""(endpoint suffix, period) of the locally tracked budgets."""


@dataclass(frozen=True, slots=True)
class QuotaWindow:
    """One budget in its current period: whose it is, which window, how big, when it resets."""

    pool_tenant: str
    pool_project: str
    period: str  # "day" | "month"
    window_start: str  # "2025-01-31" | "2025-01" (UTC)
    limit: int
    resets_at: float  # epoch seconds


def _window_key(instance_id: str, w: QuotaWindow) -> tuple[str, str, str, str, str]:
    return (instance_id, w.pool_tenant, w.pool_project, w.period, w.window_start)


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


def budget_pool(row: SettingRow | None, scope: SearchScope) -> tuple[str, str]:
    """The scope level that owns a budget: the level its setting comes from."""
    if row is None or row.tenant == "_override":
        return scope.tenant, scope.project
    if row.tenant in ("_builtin", K.SYSTEM_TENANT):
        return K.SYSTEM_TENANT, K.TENANT_LEVEL
    return row.tenant, row.project


def binding_status(statuses: Sequence[QuotaStatus | None]) -> QuotaStatus | None:
    """The budget that binds: an exhausted one (the longest wait), else the least remaining."""
    known = [s for s in statuses if s is not None]
    if not known:
        return None
    exhausted = [s for s in known if s.exhausted]
    if exhausted:
        return max(exhausted, key=lambda s: s.resets_at or "")
    limited = [s for s in known if s.remaining is not None]
    return min(limited, key=lambda s: s.remaining or 0) if limited else known[0]


def _reset_epoch(status: QuotaStatus) -> float | None:
    if not status.resets_at:
        return None
    try:
        return datetime.fromisoformat(status.resets_at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def provider_blocks(status: QuotaStatus | None, now: float) -> bool:
    """A provider-reported budget benches the instance when it is spent and is a real budget (a day,
    a month, or anything with a reset time still ahead) — not a per-second pacing window."""
    if status is None or not status.exhausted:
        return False
    reset = _reset_epoch(status)
    if reset is not None:
        return reset > now
    return status.period in ("day", "month")


# -- counter stores ------------------------------------------------------------------------------


class QuotaCounters(Protocol):
    async def reserve(self, instance_id: str, windows: Sequence[QuotaWindow], now: float) -> list[int] | None:
        """Take one call from every window, or from none: the new counts, or None when one had no room."""
        ...

    async def add(self, instance_id: str, window: QuotaWindow, calls: int, now: float) -> None:
        """Count calls made while the store was unreachable (no limit check: they happened)."""
        ...

    async def used(self, instance_id: str, windows: Sequence[QuotaWindow]) -> list[int]: ...


_RESERVE_SQL = (
    "INSERT INTO quota_counters (tenant, project, instance_id, period, window_start, used, updated_at) "
    "VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT (tenant, project, instance_id, period, window_start) "
    "DO UPDATE SET used = quota_counters.used + 1, updated_at = excluded.updated_at "
    "WHERE quota_counters.used < ? RETURNING used"
)


class SQLQuotaCounters:
    """Counters in `quota_counters`: an IMMEDIATE transaction (SQLite) / advisory-locked one
    (PostgreSQL) whose conditional upserts take a call from every window or roll back."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def reserve(self, instance_id: str, windows: Sequence[QuotaWindow], now: float) -> list[int] | None:
        counts = []
        try:
            async with self.db.transaction():
                for w in windows:
                    if w.limit <= 0:
                        raise QuotaExceededError(w.period)  # rolls the reservation transaction back
                    row = await self.db.fetchone(
                        _RESERVE_SQL,
                        (w.pool_tenant, w.pool_project, instance_id, w.period, w.window_start, now, w.limit),
                    )
                    if row is None:
                        raise QuotaExceededError(w.period)
                    counts.append(int(row[0]))
        except QuotaExceededError:
            return None
        return counts

    async def add(self, instance_id: str, window: QuotaWindow, calls: int, now: float) -> None:
        w = window
        await self.db.execute(
            "INSERT INTO quota_counters (tenant, project, instance_id, period, window_start, used, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, project, instance_id, period, window_start) "
            "DO UPDATE SET used = quota_counters.used + excluded.used, updated_at = excluded.updated_at",
            (w.pool_tenant, w.pool_project, instance_id, w.period, w.window_start, calls, now),
        )

    async def used(self, instance_id: str, windows: Sequence[QuotaWindow]) -> list[int]:
        out = []
        for w in windows:
            row = await self.db.fetchone(
                "SELECT used FROM quota_counters WHERE tenant = ? AND project = ? AND instance_id = ? "
                "AND period = ? AND window_start = ?",
                (w.pool_tenant, w.pool_project, instance_id, w.period, w.window_start),
            )
            out.append(int(row[0]) if row else 0)
        return out


_RESERVE_LUA = """
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


def _expire_at(window: QuotaWindow) -> int:
    return int(window.resets_at) + 3600  # an hour's grace for clock skew between replicas


class RedisQuotaCounters:
    """Counters in Redis: one Lua script checks every window and increments all or none."""

    def __init__(self, state: RedisState) -> None:
        self.state = state
        self._reserve = state.client.register_script(_RESERVE_LUA)

    def _key(self, instance_id: str, w: QuotaWindow) -> str:
        return self.state.key("quota", w.pool_tenant, w.pool_project, instance_id, w.period, w.window_start)

    async def reserve(self, instance_id: str, windows: Sequence[QuotaWindow], now: float) -> list[int] | None:
        keys = [self._key(instance_id, w) for w in windows]
        expire_at = [_expire_at(w) for w in windows]
        granted = await self._reserve(keys=keys, args=[*(w.limit for w in windows), *expire_at])
        return [int(c) for c in granted] if isinstance(granted, list) else None

    async def add(self, instance_id: str, window: QuotaWindow, calls: int, now: float) -> None:
        key = self._key(instance_id, window)
        async with self.state.client.pipeline(transaction=True) as pipe:
            pipe.incrby(key, calls)
            pipe.expireat(key, _expire_at(window))
            await pipe.execute()

    async def used(self, instance_id: str, windows: Sequence[QuotaWindow]) -> list[int]:
        if not windows:
            return []
        values = await self.state.client.mget([self._key(instance_id, w) for w in windows])
        return [int(v) if v is not None else 0 for v in values]


# -- the cache of provider-reported quotas -------------------------------------------------------


class QuotaCache:
    """Provider-reported `QuotaStatus` per (scope, instance, modality) for a TTL, so the gate does
    not poll a provider's quota on every call. Lookups count as `source=cache` or `source=provider`."""

    def __init__(self, max_entries: int = 10_000, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._entries: collections.OrderedDict[
            tuple[SearchScope, str, str], tuple[float, QuotaStatus | None]
        ] = collections.OrderedDict()
        self.max_entries = max_entries
        self._monotonic = monotonic

    async def lookup(
        self,
        scope: SearchScope,
        instance_id: str,
        modality: Modality,
        ttl: float,
        load: Callable[[], Awaitable[QuotaStatus | None]],
    ) -> QuotaStatus | None:
        key = (scope, instance_id, modality.value)
        entry = self._entries.get(key)
        if entry is not None and entry[0] > self._monotonic():
            count_quota_lookup(instance_id, modality.value, "cache")
            self._entries.move_to_end(key)
            return entry[1]
        count_quota_lookup(instance_id, modality.value, "provider")
        value = await load()
        if ttl > 0:
            self._store(key, value, ttl)
        return value

    def put(
        self, scope: SearchScope, instance_id: str, modality: Modality, status: QuotaStatus, ttl: float
    ) -> None:
        """A quota the provider reported with an answer: fresher than anything cached."""
        self._store((scope, instance_id, modality.value), status, max(ttl, 1.0))

    def _store(self, key: tuple[SearchScope, str, str], value: QuotaStatus | None, ttl: float) -> None:
        self._entries[key] = (self._monotonic() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()


# -- the guard -----------------------------------------------------------------------------------


class LocalQuotaGuard:
    """The dispatcher's `QuotaGuard`: local budgets (atomic counters) + provider-reported quotas."""

    def __init__(
        self,
        counters: QuotaCounters,
        settings: SettingService,
        *,
        clock: Clock | None = None,
        cache: QuotaCache | None = None,
    ) -> None:
        self.counters = counters
        self.settings = settings
        self.clock = clock or Clock()
        self.cache = cache or QuotaCache()
        self.outage = OutageLog(log, "quota counter store")
        self._scoped: dict[SearchScope, tuple[int, ScopedSettings]] = {}
        self._known: dict[tuple[str, str, str, str, str], int] = {}
        """Last count seen per (instance, pool, period, window): the basis while the store is down."""
        self._offline: dict[tuple[str, str, str, str, str], tuple[int, QuotaWindow]] = {}
        """Calls granted while the store was down, to add to it when it is back."""

    def _settings(self, scope: SearchScope) -> ScopedSettings:
        cached = self._scoped.get(scope)
        if cached is None or cached[0] != self.settings.version:
            if len(self._scoped) > 10_000:
                self._scoped.clear()
            cached = (self.settings.version, self.settings.scoped(scope))
            self._scoped[scope] = cached
        return cached[1]

    def windows(self, scope: SearchScope, instance: ProviderInstance, now: float) -> list[QuotaWindow]:
        """The instance's budgets in their current windows (none when no quota is set)."""
        out = []
        for suffix, period in PERIODS:
            raw = instance.config.extra(suffix)
            if raw is None or raw.strip() == "":
                continue
            key = K.endpoint_key(instance.id, suffix)
            try:
                limit = int(raw)
            except ValueError:
                raise ConfigError(key, f"expected a whole number of calls, got {raw!r}") from None
            tenant, project = budget_pool(self._settings(scope).row(key), scope)
            start, resets_at = current_window(period, now)
            out.append(QuotaWindow(tenant, project, period, start, limit, resets_at))
        return out

    async def reserve(self, scope: SearchScope, instance: ProviderInstance, modality: Modality) -> bool:
        now = self.clock.now()
        if provider_blocks(await self._provider_quota(scope, instance, modality), now):
            return False
        windows = self.windows(scope, instance, now)
        if not windows:
            return True
        try:
            await self._settle_offline(now)
            counts = await self.counters.reserve(instance.id, windows, now)
        except Exception as exc:
            self.outage.failed(
                exc, "each process enforces the budgets from the last counts it saw until the store is back"
            )
            return self._reserve_offline(instance.id, windows)
        self.outage.recovered()
        if counts is None:
            return False
        if len(self._known) > 10_000:
            self._known.clear()
        for window, count in zip(windows, counts, strict=True):
            self._known[_window_key(instance.id, window)] = count
        return True

    def _reserve_offline(self, instance_id: str, windows: Sequence[QuotaWindow]) -> bool:
        keys = [_window_key(instance_id, w) for w in windows]
        if any(self._offline_used(k) >= w.limit for k, w in zip(keys, windows, strict=True)):
            return False
        for key, window in zip(keys, windows, strict=True):
            calls = self._offline.get(key, (0, window))[0]
            self._offline[key] = (calls + 1, window)
        return True

    def _offline_used(self, key: tuple[str, str, str, str, str]) -> int:
        return self._known.get(key, 0) + self._offline.get(key, (0, None))[0]

    async def _settle_offline(self, now: float) -> None:
        """Add the calls granted during an outage to the shared counters (once, by one task)."""
        if not self._offline:
            return
        pending, self._offline = self._offline, {}
        items = list(pending.items())
        for index, (key, (calls, window)) in enumerate(items):
            try:
                await self.counters.add(key[0], window, calls, now)
            except BaseException:
                for later_key, value in items[index:]:
                    calls_now = self._offline.get(later_key, (0, value[1]))[0]
                    self._offline[later_key] = (calls_now + value[0], value[1])
                raise
            self._known[key] = self._known.get(key, 0) + calls

    async def status(
        self, scope: SearchScope, instance: ProviderInstance, modality: Modality
    ) -> QuotaStatus | None:
        """The binding budget now: local counters (always fresh) merged with the provider's report."""
        now = self.clock.now()
        windows = self.windows(scope, instance, now)
        local: list[QuotaStatus | None] = []
        if windows:
            try:
                used = await self.counters.used(instance.id, windows)
            except Exception as exc:
                self.outage.failed(exc, "quota status shows this process's last known counts")
                used = [self._offline_used(_window_key(instance.id, w)) for w in windows]
            local = [
                QuotaStatus(
                    used=u, limit=w.limit, period=w.period, source="local", resets_at=iso_utc(w.resets_at)
                )
                for w, u in zip(windows, used, strict=True)
            ]
        return binding_status([*local, await self._provider_quota(scope, instance, modality)])

    async def observe(
        self, scope: SearchScope, instance: ProviderInstance, modality: Modality, reported: QuotaStatus
    ) -> None:
        """A quota the provider reported with its answer (rate-limit headers)."""
        self.cache.put(scope, instance.id, modality, reported, self._ttl(scope))

    def _ttl(self, scope: SearchScope) -> float:
        return self._settings(scope).get_int(K.QUOTA_CACHE_TTL_MINUTES, 5) * 60.0

    async def _provider_quota(
        self, scope: SearchScope, instance: ProviderInstance, modality: Modality
    ) -> QuotaStatus | None:
        async def load() -> QuotaStatus | None:
            if not isinstance(instance, ReportsQuota):
                return None
            try:
                value = instance.current_quota(scope)
                if inspect.isawaitable(value):
                    value = await value
            except Exception:
                log.warning("current_quota of %s failed", instance.id, exc_info=True)
                return None
            # An add-on's hook is not type-checked against us: anything but a status counts as "none".
            return value if isinstance(value, QuotaStatus) else None

        return await self.cache.lookup(scope, instance.id, modality, self._ttl(scope), load)

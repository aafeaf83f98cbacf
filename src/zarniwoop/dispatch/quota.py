"""Provider quotas: locally tracked call budgets, merged with what providers report.

    research.endpoint.serper-main.quota.daily: 2500      # calls per UTC day
    research.endpoint.serper-main.quota.monthly: 50000   # calls per UTC month

Reserve before the call: `LocalQuotaGuard.reserve` atomically spends one call from every budget
of the instance, or none, on the one budget engine of `limits/` (`limits/call_budgets.py` over
`limits/budgets.py`: memory, SQL or Redis; a call is one unit), so
200 concurrent searches against a budget of 100 make exactly 100 upstream calls, across any number
of processes sharing the store. An exhausted instance is skipped as
`skipped_exhausted` — no cooldown — and comes back when its period rolls over.

A budget belongs to the scope level where it is set: in `(_system, _tenant)` it is one budget
for the whole deployment (the operator's key), in `(acme, _tenant)` acme's projects share it,
in `(acme, review)` it is that project's own.

Provider-reported quotas (`SearchPage.quota`, read from rate-limit headers, or an instance's
own `current_quota(scope)`) go through the `QuotaCache` for `research.quota.cache.ttlMinutes`
and merge in with `source: provider`; a provider that says a daily or monthly budget is spent
benches the instance (as exhausted) until its reset, or until the cache entry expires.

If the counter store is unreachable, searches keep working (the call budgets' outage policy,
`limits.CallBudgetKeeper`, docs/robustness.md): each process enforces the budgets from the last
counts it saw plus its own calls since, logs the outage once, loudly, and adds those calls to the
shared counters when the store is back.
"""

from __future__ import annotations

import collections
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..config import keys as K
from ..contract.errors import ConfigError
from ..contract.protocol import ReportsQuota
from ..contract.results import QuotaStatus
from ..limits.budgets import EDGE_SPELLING
from ..limits.call_budgets import BudgetWindow, CallBudgetKeeper, CallBudgets, current_window
from ..limits.clock import Clock, iso_utc
from ..observability.metrics import count_quota_lookup

if TYPE_CHECKING:
    from ..config.settings import ScopedSettings, SettingRow, SettingService
    from ..contract.enums import Modality
    from ..contract.protocol import ProviderInstance
    from ..contract.query import SearchScope

log = logging.getLogger(__name__)

PERIODS: tuple[tuple[str, str], ...] = (("quota.daily", "daily"), ("quota.monthly", "monthly"))
"""(endpoint suffix, budget period) of the locally tracked budgets."""


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


# -- the cache of provider-reported quotas -------------------------------------------------------


class QuotaCache:
    """Provider-reported `QuotaStatus` per (scope, instance, modality) for a TTL, so the gate does
    not poll a provider's quota on every call. Lookups count as `source=cache` or `source=provider`."""

    def __init__(self, max_entries: int = 10_000, clock: Clock | None = None) -> None:
        self._entries: collections.OrderedDict[
            tuple[SearchScope, str, str], tuple[float, QuotaStatus | None]
        ] = collections.OrderedDict()
        self.max_entries = max_entries
        self.clock = clock or Clock()

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
        if entry is not None and entry[0] > self.clock.monotonic():
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
        self._entries[key] = (self.clock.monotonic() + ttl, value)
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
        counters: CallBudgets,
        settings: SettingService,
        *,
        clock: Clock | None = None,
        cache: QuotaCache | None = None,
    ) -> None:
        self.budgets = CallBudgetKeeper(counters)
        self.settings = settings
        self.clock = clock or Clock()
        self.cache = cache or QuotaCache(clock=self.clock)
        self._scoped: dict[SearchScope, tuple[int, ScopedSettings]] = {}

    def _settings(self, scope: SearchScope) -> ScopedSettings:
        cached = self._scoped.get(scope)
        if cached is None or cached[0] != self.settings.version:
            if len(self._scoped) > 10_000:
                self._scoped.clear()
            cached = (self.settings.version, self.settings.scoped(scope))
            self._scoped[scope] = cached
        return cached[1]

    def windows(self, scope: SearchScope, instance: ProviderInstance, now: float) -> list[BudgetWindow]:
        """The instance's budgets in their current windows (none when no quota is set)."""
        out = []
        settings = self._settings(scope)
        for suffix, period in PERIODS:
            raw = instance.config.extra(suffix)
            if raw is None or raw.strip() == "":
                continue
            key = K.endpoint_key(instance.id, suffix)
            effective = settings.row(key)
            # On the operator's key every level's budget counts, each in its own pool: the tightest
            # binds (config/ceilings.py). Otherwise the innermost level's budget is the one.
            levels = settings.levels(key) if instance.config.operator_funded and effective else ()
            rows: list[tuple[SettingRow | None, str]] = [(r, r.value) for r in levels] or [(effective, raw)]
            start, resets_at = current_window(period, now)
            for row, value in rows:
                try:
                    limit = int(value)
                except ValueError:
                    raise ConfigError(key, f"expected a whole number of calls, got {value!r}") from None
                tenant, project = budget_pool(row, scope)
                out.append(BudgetWindow(tenant, project, period, start, limit, resets_at))
        return out

    async def reserve(self, scope: SearchScope, instance: ProviderInstance, modality: Modality) -> bool:
        now = self.clock.now()
        if provider_blocks(await self._provider_quota(scope, instance, modality), now):
            return False
        return await self.budgets.reserve(instance.id, self.windows(scope, instance, now), now)

    async def status(
        self, scope: SearchScope, instance: ProviderInstance, modality: Modality
    ) -> QuotaStatus | None:
        """The binding budget now: local counters (always fresh) merged with the provider's report."""
        now = self.clock.now()
        windows = self.windows(scope, instance, now)
        local: list[QuotaStatus | None] = []
        if windows:
            used = await self.budgets.used(instance.id, windows)
            local = [
                QuotaStatus(  # `research_providers` spells the period "day" / "month"
                    used=u,
                    limit=w.limit,
                    period=EDGE_SPELLING[w.period],
                    source="local",
                    resets_at=iso_utc(w.resets_at),
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

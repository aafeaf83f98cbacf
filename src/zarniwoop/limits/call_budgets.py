"""Call budgets: a number of calls per UTC day or month, taken one call at a time, all or none.

    research.endpoint.serper-main.quota.daily: 2500      # calls per UTC day
    research.endpoint.serper-main.quota.monthly: 50000   # calls per UTC month

The search side's budgets, on the one budget engine (`budgets.py`, a call is one unit): the
dispatcher's `LocalQuotaGuard` decides which windows a call draws on; `CallBudgets` turns each
window into a budget line (`unit="calls"`, the provider instance as its subject, the pool that
owns the budget as its tenant and owner) and *spends* one call on all of them or none — a call
sent is a call billed, so nothing is held to settle later. `charge` adds calls without a check
(calls made while the store was away); `used` reads the counts.

200 concurrent searches against a budget of 100 make exactly 100 upstream calls, across any number
of processes sharing the store (`SQLBudgets` or `RedisBudgets`).

Outage policy (`budgets.OUTAGE_POLICY`, docs/robustness.md), in `CallBudgetKeeper`: call budgets
fail *to the last counts seen* — while the store is unreachable each process enforces the budgets
from the last counts it saw plus its own calls since, logs the outage once, and charges those
calls to the store when it is back. Searches keep working; the overshoot is bounded by what each
process saw as remaining.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ..contract.errors import BudgetUnavailableError, QuotaExceededError
from ..contract.names import TENANT_LEVEL
from ..observability.outage import OutageLog
from .budgets import Bucket, Budgets, QuotaLine, current_buckets, period_named

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BudgetWindow:
    """One call budget in its current period: whose it is, which window, how big, when it resets."""

    pool_tenant: str
    pool_project: str
    period: str  # "daily" | "monthly" (or the search side's "day" | "month")
    window_start: str  # "2025-01-31" | "2025-01" (UTC)
    limit: int
    resets_at: float  # epoch seconds


WindowKey = tuple[str, str, str, str, str]


def window_key(subject: str, w: BudgetWindow) -> WindowKey:
    return (subject, w.pool_tenant, w.pool_project, period_named(w.period), w.window_start)


def current_window(period: str, now: float) -> tuple[str, float]:
    """`(window_start, resets_at)` of the UTC day or month containing `now`."""
    bucket = current_buckets(now)[period_named(period)]
    return bucket.start, bucket.resets_at


def window_line(subject: str, w: BudgetWindow) -> tuple[QuotaLine, Bucket]:
    """A call window as a line of the one engine, and the bucket it counts in."""
    period = period_named(w.period)
    level = "tenant" if w.pool_project == TENANT_LEVEL else "project"
    line = QuotaLine(
        level, w.pool_project, period, w.limit, unit="calls", subject=subject, tenant=w.pool_tenant
    )
    return line, Bucket(period, w.window_start, w.resets_at)


class CallBudgets:
    """A provider instance's call windows on a `Budgets` engine; `subject` is the instance id."""

    def __init__(self, budgets: Budgets) -> None:
        self.budgets = budgets

    async def reserve(self, subject: str, windows: Sequence[BudgetWindow], now: float) -> list[int] | None:
        """Take one call from every window, or from none: the new counts, or None when one had no room."""
        lines: list[QuotaLine] = []
        buckets: dict[str, Bucket] = {}
        for w in windows:
            line, bucket = window_line(subject, w)
            if buckets.setdefault(bucket.period, bucket) != bucket:
                raise ValueError(f"one reservation spans two {bucket.period} windows")
            lines.append(line)
        try:
            spent = await self.budgets.spend("", lines, 1, buckets=buckets)
        except BudgetUnavailableError:
            raise
        except QuotaExceededError:
            return None
        return [status.used for status in spent]

    async def charge(self, subject: str, window: BudgetWindow, calls: int, now: float) -> None:
        """Count calls made while the store was unreachable (no limit check: they happened)."""
        line, bucket = window_line(subject, window)
        await self.budgets.charge("", line, calls, bucket=bucket)

    async def used(self, subject: str, windows: Sequence[BudgetWindow]) -> list[int]:
        out = []
        for w in windows:  # a status per window: windows of one period may be of two pools
            line, bucket = window_line(subject, w)
            statuses = await self.budgets.status("", [line], buckets={bucket.period: bucket})
            if not statuses:  # the store reported nothing: unreachable (the keeper falls back)
                raise LookupError(f"no count for the {line.period} calls of {subject}")
            out.append(statuses[0].used)
        return out


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


__all__ = ["BudgetWindow", "CallBudgetKeeper", "CallBudgets", "current_window", "window_key", "window_line"]

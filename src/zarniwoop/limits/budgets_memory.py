"""The budget engine in one process's memory (`budgets.py` says what a budget is): for a process
that shares its budgets with no other, and for tests of the policies above it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .budgets import (
    HOLD_TTL_SECONDS,
    Bucket,
    BucketChoice,
    Budgets,
    CounterKey,
    Hold,
    LineStatus,
    QuotaLine,
    bucket_of,
    check_room,
    counter_key,
    current_buckets,
)
from .clock import Clock


class MemoryBudgets(Budgets):
    """The budgets of one process (no store to lose: no outage)."""

    def __init__(self, *, clock: Clock | None = None, hold_ttl: float = HOLD_TTL_SECONDS) -> None:
        self.clock = clock or Clock()
        self.hold_ttl = hold_ttl
        self._used: dict[CounterKey, int] = {}
        self._holds: dict[str, tuple[float, int, list[CounterKey]]] = {}
        self._alerts: set[tuple[CounterKey, int]] = set()

    def _statuses(
        self, tenant: str, lines: Sequence[QuotaLine], buckets: Mapping[str, Bucket]
    ) -> list[LineStatus]:
        now = self.clock.now()
        self._holds = {k: v for k, v in self._holds.items() if v[0] > now}
        out = []
        for line in lines:
            key = counter_key(tenant, line, buckets[line.period].start)
            held = sum(amount for _, amount, keys in self._holds.values() if key in keys)
            out.append(LineStatus(line, key[-1], self._used.get(key, 0), held))
        return out

    async def _hold(self, hold: Hold, limited: Sequence[QuotaLine]) -> None:
        windows = {b.period: b for b in hold.buckets}
        check_room(self._statuses(hold.tenant, limited, windows), hold.amount)
        keys = [counter_key(hold.tenant, line, windows[line.period].start) for line in limited]
        self._holds[hold.id] = (self.clock.now() + self.hold_ttl, hold.amount, keys)

    async def _spend(self, hold: Hold) -> list[LineStatus]:
        windows = {b.period: b for b in hold.buckets}
        check_room(
            self._statuses(hold.tenant, [ln for ln in hold.lines if ln.limit is not None], windows),
            hold.amount,
        )
        return await self._charge_hold(hold, hold.amount, every=True)

    async def settle(self, hold: Hold, amount: int) -> list[LineStatus]:
        return await self._charge_hold(hold, amount, every=False)

    async def _charge_hold(self, hold: Hold, amount: int, *, every: bool) -> list[LineStatus]:
        self._holds.pop(hold.id, None)
        windows = {b.period: b for b in hold.buckets}
        for line in hold.lines:
            key = counter_key(hold.tenant, line, windows[line.period].start)
            self._used[key] = self._used.get(key, 0) + max(0, amount)
        chosen = [line for line in hold.lines if every or line.limit is not None]
        return self._statuses(hold.tenant, chosen, windows)

    async def release(self, hold: Hold) -> None:
        self._holds.pop(hold.id, None)

    async def status(
        self, tenant: str, lines: Sequence[QuotaLine], *, buckets: BucketChoice = None
    ) -> list[LineStatus]:
        return self._statuses(tenant, lines, buckets or current_buckets(self.clock.now()))

    async def mark_alert(self, tenant: str, status: LineStatus, threshold: int) -> bool:
        mark = (counter_key(tenant, status.line, status.bucket), threshold)
        if mark in self._alerts:
            return False
        self._alerts.add(mark)
        return True

    async def charge(
        self, tenant: str, line: QuotaLine, amount: int, *, bucket: str | Bucket | None = None
    ) -> None:
        key = counter_key(tenant, line, bucket_of(line, bucket, self.clock.now()).start)
        self._used[key] = self._used.get(key, 0) + amount


__all__ = ["MemoryBudgets"]

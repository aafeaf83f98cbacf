"""Time in tests without a stopwatch (issue 24): a clock the test moves, and a pace checked by order.

`TestClock` is the `limits.clock.Clock` that stores and budgets take as `clock=`; it starts at the
real time (so date buckets and key TTLs are today's) and `advance(s)` lapses a TTL without sleeping,
so a busy machine cannot lapse it early either. `ManualClock` is the same, except that a `sleep`
waits until the test advances the clock past its end: for code that races a deadline (on
`TestClock` every deadline lapses at once).
"""

from __future__ import annotations

import asyncio
import time

from zarniwoop.limits.clock import Clock


class TestClock(Clock):
    """One reading for wall and monotonic time; `sleep` moves it instead of waiting."""

    __test__ = False  # not a test class, whatever its name

    def __init__(self, start: float | None = None) -> None:
        self.t = time.time() if start is None else start

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds

    async def sleep(self, seconds: float) -> None:
        self.advance(seconds)


class ManualClock(TestClock):
    """Time moves only by `advance`; each `sleep` ends when it has moved far enough.

    `sleepers` is how many sleeps are waiting now: a test advances once everyone it expects waits."""

    __test__ = False

    def __init__(self, start: float | None = None) -> None:
        super().__init__(start)
        self._waiting: list[tuple[float, asyncio.Future[None]]] = []

    @property
    def sleepers(self) -> int:
        return sum(1 for _, woken in self._waiting if not woken.done())

    def advance(self, seconds: float) -> None:
        self.t += seconds
        for until, woken in self._waiting:
            if until <= self.t and not woken.done():
                woken.set_result(None)
        self._waiting = [(until, woken) for until, woken in self._waiting if not woken.done()]

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        woken = asyncio.get_running_loop().create_future()
        self._waiting.append((self.t + seconds, woken))
        await woken


def ahead_of_pace(
    arrivals: list[float], start: float, interval: float, at_once: int = 1
) -> list[tuple[int, float]]:
    """The arrivals (index, seconds after `start`) that came earlier than a pace allows.

    A pacer (the GCRA of limits/pacing.py) hands out start slots `interval` apart, `at_once` of
    them at first (a burst: `perSecond: 2, burst: 4` starts 3 at once), none before `start` (read
    before the first call, on the arrivals' clock); each call is sent at or after its slot, and an
    idle spell never gives back more than the burst. So the k-th arrival, sorted, is at least
    `max(0, k - at_once + 1)` intervals after `start`: a lower bound that a busy machine (which
    only delays) cannot break, where counting requests per window with a tolerance can.
    1 ms covers two clocks read and a wait carried as text."""
    out = []
    for k, at in enumerate(sorted(arrivals)):
        if at < start + max(0, k - at_once + 1) * interval - 0.001:
            out.append((k, round(at - start, 3)))
    return out

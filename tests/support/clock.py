"""A clock the test moves: the `limits.clock.Clock` that stores and budgets take as `clock=`.

    clock = TestClock()            # starts at the real time, so date buckets and key TTLs are today's
    ledger.clock = clock
    clock.advance(0.35)            # a hold's TTL lapses without sleeping (and without racing a busy machine)
"""

from __future__ import annotations

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

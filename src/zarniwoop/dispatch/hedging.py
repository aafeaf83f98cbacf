"""Hedging that learns: when to race a slow call, and when a candidate that keeps losing is benched.

- **When to hedge.** `research.hedge.afterMs` set to a number: race after that many ms (0 = never).
  Unset: after `P95_FACTOR` × the running candidate's observed p95 latency (its last `WINDOW`
  answers in this process), at least `FLOOR` seconds, once it has answered `MIN_SAMPLES` times — so
  a hedge goes out only for a call clearly slower than that endpoint usually is (a hedge costs a
  second upstream call, and quota); before that, no hedging.
- **Consecutive-loss ejection** (Envoy's outlier detection, consecutive failures): a candidate that
  loses `LOSSES_TO_BENCH` hedges in a row (cancelled because the next one answered first) is benched
  like a timeout through the cooldown store (shared by replicas), so a hanging default stops costing
  the hedge delay on every search. A win resets its streak.

Latencies and loss streaks are per process (cheap, and a replica that does not see a loser simply
benches it a few searches later); the bench itself is shared.
"""

from __future__ import annotations

import collections
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..contract.query import SearchScope

WINDOW = 100
MIN_SAMPLES = 20
FLOOR = 0.5
P95_FACTOR = 2.0
LOSSES_TO_BENCH = 3


def p95(samples: collections.deque[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


class HedgeLedger:
    def __init__(self) -> None:
        self._latency: dict[str, collections.deque[float]] = {}
        self._losses: dict[tuple[SearchScope, str], int] = {}

    def answered(self, scope: SearchScope, subject: str, instance_id: str, seconds: float) -> None:
        """A call that answered (any answer): a latency sample, and its loss streak is over."""
        self._latency.setdefault(instance_id, collections.deque(maxlen=WINDOW)).append(seconds)
        self._losses.pop((scope, subject), None)

    def lost(self, scope: SearchScope, subject: str) -> bool:
        """A hedge lost; True = that was the `LOSSES_TO_BENCH`-th in a row (the streak restarts)."""
        streak = self._losses.get((scope, subject), 0) + 1
        if streak >= LOSSES_TO_BENCH:
            self._losses.pop((scope, subject), None)
            return True
        self._losses[(scope, subject)] = streak
        return False

    def hedge_after(self, instance_id: str, setting_ms: int | None) -> float | None:
        """Seconds before racing a call to `instance_id`; None = do not hedge it."""
        if setting_ms is not None:
            return setting_ms / 1000 or None
        samples = self._latency.get(instance_id)
        if samples is None or len(samples) < MIN_SAMPLES:
            return None
        return max(FLOOR, P95_FACTOR * p95(samples))

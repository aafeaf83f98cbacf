"""Hedging that learns: when to race a slow call, and when a candidate that keeps losing is benched.

- **When to hedge.** `research.hedge.afterMs` set to a number: race after that many ms (0 = never).
  Unset: after `P95_FACTOR` × the running candidate's observed p95 latency (its last `WINDOW`
  answers in this process), at least `FLOOR` seconds, once it has answered `MIN_SAMPLES` times — so
  a hedge goes out only for a call clearly slower than that endpoint usually is (a hedge costs a
  second upstream call, and quota); before that, no hedging.
- **Consecutive-loss ejection** (Envoy's outlier detection, consecutive failures): a candidate that
  loses `LOSSES_TO_BENCH` hedges in a row (overtaken: cancelled because a candidate called after it
  answered first) is benched like a timeout through the cooldown store (shared by replicas), so a
  hanging default stops costing the hedge delay on every search. A win resets its streak. The hedge
  itself, cut because the call it raced answered first, has lost nothing but its later start: it is
  not counted (else a busy machine, slowing the default past its hedge delay, benched the fallback —
  and once the default's quota ran out, every search failed).

- **A hanging endpoint is suspect at once** (issue 27): while a call to an endpoint has been
  outstanding longer than its hedge delay (`P95_FACTOR` × observed p95, at least `FLOOR`) — or,
  before it has `MIN_SAMPLES` answers, longer than `COLD_SUSPECT_AFTER` — with no answer from it
  since that call started, every new search that would call it races it against the next
  candidate at once (hedge delay 0) instead of waiting. The hedges it then loses bench it within
  `LOSSES_TO_BENCH` searches, so a hang costs the searches started in its first
  `COLD_SUSPECT_AFTER` seconds one timeout each, and no later search any (4 at 5 searches/s).
  Suspicion ends when the endpoint answers (or its calls end), or with its bench.

Latencies, outstanding calls and loss streaks are per process (cheap, and a replica that does not see a loser simply
benches it a few searches later); the bench itself is shared.
"""

from __future__ import annotations

import collections
import math
from typing import TYPE_CHECKING

from ..limits.clock import Clock

if TYPE_CHECKING:
    from ..contract.query import SearchScope

WINDOW = 100
MIN_SAMPLES = 20
FLOOR = 0.5
P95_FACTOR = 2.0
LOSSES_TO_BENCH = 3
COLD_SUSPECT_AFTER = 0.75
"""Seconds a call may be outstanding, before its endpoint has `MIN_SAMPLES` answers, until new
searches treat the endpoint as suspect (race it at once): 1.5 × `FLOOR`, the least hedge delay
a learned p95 gives — a cold endpoint is given a little more than a warm one would get."""


def p95(samples: collections.deque[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


class HedgeLedger:
    def __init__(self, clock: Clock | None = None) -> None:
        self._latency: dict[str, collections.deque[float]] = {}
        self._losses: dict[tuple[SearchScope, str], int] = {}
        self._clock = clock or Clock()
        self._outstanding: dict[tuple[SearchScope, str], dict[str, float]] = {}
        """Calls under way per (scope, endpoint) — a scope may point an id elsewhere: call id →
        start, oldest first (insertion order)."""
        self._answered_at: dict[tuple[SearchScope, str], float] = {}

    def answered(self, scope: SearchScope, subject: str, instance_id: str, seconds: float) -> None:
        """A call that answered (any answer): a latency sample, and its loss streak is over."""
        self._latency.setdefault(instance_id, collections.deque(maxlen=WINDOW)).append(seconds)
        self._losses.pop((scope, subject), None)
        self._answered_at[(scope, instance_id)] = self._clock.monotonic()

    def started(self, scope: SearchScope, instance_id: str, call_id: str) -> None:
        self._outstanding.setdefault((scope, instance_id), {})[call_id] = self._clock.monotonic()

    def ended(self, scope: SearchScope, instance_id: str, call_id: str) -> None:
        calls = self._outstanding.get((scope, instance_id))
        if calls is not None:
            calls.pop(call_id, None)
            if not calls:
                del self._outstanding[(scope, instance_id)]

    def suspect(self, scope: SearchScope, instance_id: str) -> bool:
        """True while a call to `instance_id` has been outstanding longer than its hedge delay (or
        `COLD_SUSPECT_AFTER` before it has a p95) with no answer from it since that call began."""
        calls = self._outstanding.get((scope, instance_id))
        if not calls:
            return False
        answered = self._answered_at.get((scope, instance_id), -math.inf)
        oldest = next((t for t in calls.values() if t > answered), None)
        if oldest is None:
            return False
        return self._clock.monotonic() - oldest >= (self.hedge_after(instance_id, None) or COLD_SUSPECT_AFTER)

    def outstanding(self, scope: SearchScope, instance_id: str) -> int:
        return len(self._outstanding.get((scope, instance_id), ()))

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

"""Reachability: did the last real call of an instance (in this scope) work, and did its probe?

The routing view's `reachable` (true/false/null) and the admin's `lastError` come from here.
Last outcomes are in memory per process by default; with Redis every replica sees every replica's
last outcome (`RedisReachability` in `reachability_redis.py`). `ProbeResult` is what a free probe found
(`probe.py` makes them, the dispatcher keeps them, `status.py` reads them): it lives here, below
both, so that neither has to import the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..limits.clock import iso_utc

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..contract.query import SearchScope


@dataclass(frozen=True, slots=True)
class LastOutcome:
    ok: bool
    error: str | None
    at: float  # epoch seconds


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One probe of an endpoint: when, whether it answered, how long it took, why not."""

    at: float  # epoch seconds
    ok: bool
    duration_ms: int
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"at": iso_utc(self.at), "ok": self.ok, "durationMs": self.duration_ms, "error": self.error}


class ReachabilityStore(Protocol):
    async def record(self, scope: SearchScope, instance_id: str, outcome: LastOutcome) -> None: ...

    async def get_many(self, scope: SearchScope, instance_ids: Sequence[str]) -> dict[str, LastOutcome]: ...


class MemoryReachability:
    """This process's last outcomes (the dict the dispatcher keeps anyway)."""

    def __init__(self, outcomes: dict[tuple[SearchScope, str], LastOutcome] | None = None) -> None:
        self.outcomes = outcomes if outcomes is not None else {}

    async def record(self, scope: SearchScope, instance_id: str, outcome: LastOutcome) -> None:
        self.outcomes[(scope, instance_id)] = outcome

    async def get_many(self, scope: SearchScope, instance_ids: Sequence[str]) -> dict[str, LastOutcome]:
        return {i: o for i in instance_ids if (o := self.outcomes.get((scope, i))) is not None}

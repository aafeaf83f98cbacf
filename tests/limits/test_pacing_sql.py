"""Pacing shared through the database (`serve --workers N`): two connections, one rate."""

from __future__ import annotations

import pytest

from zarniwoop.limits.clock import Clock
from zarniwoop.limits.pacing import LocalPacer
from zarniwoop.limits.pacing_sql import SQLPacer
from zarniwoop.storage.db import open_database

pytestmark = pytest.mark.anyio


class FixedClock(Clock):
    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t


async def test_two_processes_share_one_gcra(tmp_path, database_url):
    """Two connections to one database (as two workers have) take turns on one key: the slots are
    those one process alone would get, `perSecond: 2, burst: 4` — 3 at once, then every 0.525 s."""
    clock = FixedClock()
    first, second = open_database(database_url, tmp_path), open_database(database_url, tmp_path)
    try:
        await first.migrate()
        await second.migrate()
        a, b = SQLPacer(first, LocalPacer(clock)), SQLPacer(second, LocalPacer(clock))
        waits = [await (a if i % 2 == 0 else b).reserve("wiki:wiki:-", 2, 10.0, burst=4) for i in range(6)]
        assert waits == pytest.approx([0, 0, 0, 0.525, 1.05, 1.575], abs=1e-3)
        # a slot further away than the caller can wait is not taken, by either
        assert await b.reserve("wiki:wiki:-", 2, 1.0, burst=4) is None
        assert await a.reserve("wiki:wiki:-", 2, 2.2, burst=4) == pytest.approx(2.1, abs=1e-3)
        # other keys (another endpoint or credential) have their own pace; no rate = no pacing
        assert await b.reserve("wiki:other:-", 2, 0.0, burst=4) == 0.0
        assert await a.reserve("wiki:wiki:-", None, 0.0) == 0.0
        clock.t += 60  # idle: the burst is back
        assert [await b.reserve("wiki:wiki:-", 2, 0.0, burst=4) for _ in range(3)] == [0.0, 0.0, 0.0]
        assert await a.reserve("wiki:wiki:-", 2, 0.0, burst=4) is None
        rows = await first.fetchall("SELECT pace_key FROM pacing ORDER BY pace_key")
        assert [r[0] for r in rows] == ["wiki:other:-", "wiki:wiki:-"]
    finally:
        await first.aclose()
        await second.aclose()


async def test_an_unusable_database_leaves_each_process_pacing_itself(tmp_path, caplog):
    clock = FixedClock()
    db = open_database(None, tmp_path)  # never migrated: no `pacing` table
    try:
        pacer = SQLPacer(db, LocalPacer(clock))
        assert [await pacer.reserve("k", 2, 10.0) for _ in range(2)] == pytest.approx([0, 0.525])
        assert pacer.outage.failures >= 1
    finally:
        await db.aclose()
    assert sum("database (pacing)" in r.getMessage() for r in caplog.records) == 1


async def test_a_fast_endpoint_leases_its_slots_ahead_and_the_rate_still_holds(tmp_path):
    """At 10,000 calls/s a process takes its next 32 slots (3.4 ms) in one transaction; the other
    process starts after them, and a lease left unused goes stale instead of bunching calls later."""
    clock = FixedClock()
    first, second = open_database(None, tmp_path), open_database(None, tmp_path)
    try:
        await first.migrate()
        a, b = SQLPacer(first, LocalPacer(clock)), SQLPacer(second, LocalPacer(clock))
        interval = 1.05 / 10_000
        assert await a.reserve("fast", 10_000, 1.0) == 0.0
        [(tat_after_lease,)] = await first.fetchall("SELECT tat FROM pacing")
        assert tat_after_lease - clock.t == pytest.approx(32 * interval, abs=2e-5)  # slots 0 … 31
        waits = [await a.reserve("fast", 10_000, 1.0) for _ in range(31)]  # from the lease: no writes
        assert waits[:9] == [0.0] * 9  # under a millisecond: go now
        assert waits[-1] == pytest.approx(31 * interval, abs=2e-5)
        [(unchanged,)] = await first.fetchall("SELECT tat FROM pacing")
        assert unchanged == tat_after_lease
        assert await b.reserve("fast", 10_000, 1.0) == pytest.approx(32 * interval, abs=2e-5)
        assert await a.reserve("fast", 10_000, 0.001) is None  # a's lease is spent; b holds the next
        clock.t += 1.0
        assert await a.reserve("fast", 10_000, 1.0) == 0.0  # a new lease of 32 slots
        assert len(a._leased["fast"]) == 31
        clock.t += 1.0  # unused, they are stale now: dropped, not spent in a bunch
        assert await a.reserve("fast", 10_000, 0.0) == 0.0
        [(tat,)] = await first.fetchall("SELECT tat FROM pacing")
        assert tat > clock.t  # the slot came from the table, not from the stale lease
    finally:
        await first.aclose()
        await second.aclose()

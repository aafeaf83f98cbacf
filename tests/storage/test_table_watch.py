"""`TableWatch`: a snapshot is reloaded when its table's fingerprint changed, asked at most every `max_age`."""

from __future__ import annotations

import pytest

from tests.support.clock import TestClock
from zarniwoop.storage.db import open_database
from zarniwoop.storage.table_watch import TableWatch

pytestmark = pytest.mark.anyio


async def test_a_change_is_seen_once_and_not_before_max_age(tmp_path):
    db = open_database(None, tmp_path)
    await db.execute("CREATE TABLE t (v INTEGER)")
    clock = TestClock(1000.0)
    watch = TableWatch(db, "SELECT COUNT(*), MAX(v) FROM t", clock)
    try:
        first = await watch.changed(max_age=60)
        assert first == (0, None)  # no snapshot yet: load one
        assert await watch.changed(max_age=60) == (0, None)  # not loaded: still to load
        watch.loaded = first
        assert await watch.changed(max_age=60) is None
        await db.execute("INSERT INTO t (v) VALUES (7)")
        clock.advance(30)
        assert await watch.changed(max_age=60) is None  # checked 30 s ago: not asked again yet
        clock.advance(30)
        assert await watch.changed(max_age=60) == (1, 7)
        assert watch.checked_at == 1060.0
        assert await watch.changed() == (1, 7)  # max_age 0: always asked
        watch.loaded = (1, 7)
        assert await watch.changed() is None
        watch.loaded = None  # forgotten (a rolled-back write): reloaded at once
        assert await watch.changed(max_age=60) == (1, 7)
    finally:
        await db.aclose()

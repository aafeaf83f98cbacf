"""`TableWatch`: a snapshot is reloaded when its table's fingerprint changed, asked at most every `max_age`."""

from __future__ import annotations

import pytest

from tests.support.clock import TestClock
from zarniwoop.storage.db import open_database
from zarniwoop.storage.table_watch import TableWatch

pytestmark = pytest.mark.anyio


async def test_a_change_is_loaded_once_and_not_looked_for_before_max_age(tmp_path):
    db = open_database(None, tmp_path)
    await db.execute("CREATE TABLE t (v INTEGER)")
    clock = TestClock(1000.0)
    watch = TableWatch(db, "SELECT COUNT(*), MAX(v) FROM t", clock)
    loads: list[tuple[int, ...]] = []

    async def load() -> None:
        loads.append(tuple(v for (v,) in await db.fetchall("SELECT v FROM t")))

    async def failing_load() -> None:
        raise OSError("the database went away")

    try:
        assert await watch.refresh(load, max_age=60) is True  # no snapshot yet: loaded
        assert watch.loaded == (0, None)
        assert await watch.refresh(load, max_age=60) is False
        await db.execute("INSERT INTO t (v) VALUES (7)")
        clock.advance(30)
        assert await watch.refresh(load, max_age=60) is False  # checked 30 s ago: not asked again yet
        clock.advance(30)
        with pytest.raises(OSError):
            await watch.refresh(failing_load, max_age=60)
        assert watch.loaded == (0, None)  # the failed load is tried again at the next check
        assert await watch.refresh(load, max_age=60) is False
        clock.advance(60)
        assert await watch.refresh(load, max_age=60) is True
        assert (watch.loaded, watch.checked_at) == ((1, 7), 1120.0)
        assert await watch.refresh(load) is False  # max_age 0: asked, unchanged
        watch.loaded = None  # forgotten (a rolled-back write): reloaded at once
        assert await watch.refresh(load, max_age=60) is True
        assert loads == [(), (7,), (7,)]
    finally:
        await db.aclose()

"""The result cache every process of a deployment shares: a SQLite file under ZARNIWOOP_HOME below
each process's LRU (embedded default), or Redis — both bounded by `research.cache.maxBytes`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zarniwoop.dispatch.cache import MemoryResultCache, TieredResultCache, cache_digest, encode_result
from zarniwoop.dispatch.cache_sql import SQLiteResultCache
from zarniwoop.observability.metrics import CACHE_LOOKUPS

from ..support.clock import TestClock
from .test_cache import result

pytestmark = pytest.mark.anyio


class Clock(TestClock):
    __test__ = False

    def __init__(self) -> None:
        super().__init__(1_800_000_000.0)


def on_disk(path: Path) -> int:
    """The cache's bytes on disk: the file, its WAL and its shared-memory index."""
    return sum(os.path.getsize(f"{path}{s}") for s in ("", "-wal", "-shm") if os.path.exists(f"{path}{s}"))


async def test_ten_thousand_distinct_searches_stay_within_max_bytes_on_disk(tmp_path):
    max_bytes = 4 * 1024 * 1024
    clock = Clock()
    cache = SQLiteResultCache(tmp_path / "cache.db", max_bytes=max_bytes, clock=clock)
    stored = 0
    for i in range(10_000):
        clock.t += 0.001
        await cache.set(("scope", i), result(f"t{i}"), 600)
        stored += len(encode_result(result(f"t{i}")))
    assert stored > 3 * max_bytes  # the bound had work to do
    size = on_disk(tmp_path / "cache.db")
    assert size <= max_bytes * 1.10, (size, max_bytes)
    # least recently written went first; the newest are all there
    assert await cache.get(("scope", 0)) is None
    newest = [await cache.get(("scope", i)) for i in range(9_900, 10_000)]
    assert [r.hits[0].title for r in newest if r is not None] == [f"t{i}" for i in range(9_900, 10_000)]
    await cache.aclose()


async def test_a_hit_renews_an_entry_so_eviction_takes_the_least_recently_used(tmp_path):
    clock = Clock()
    cache = SQLiteResultCache(tmp_path / "cache.db", max_bytes=512 * 1024, clock=clock)
    for i in range(100):
        clock.t += 1
        await cache.set(i, result(f"t{i}"), 600)
    clock.t += 1
    assert (await cache.get(0)).hits[0].title == "t0"  # 0 is now the most recently used

    async def stored(key: int) -> bool:  # without touching it
        row = await cache.db.fetchone("SELECT 1 FROM entries WHERE key = ?", (cache_digest(key),))
        return row is not None

    i = 100
    while await stored(1):  # until the first eviction
        clock.t += 1
        await cache.set(i, result(f"t{i}"), 600)
        i += 1
    assert 100 < i < 1000
    assert await stored(0)  # written before 1 but read since: kept
    assert not await stored(2) and await stored(i - 1)
    await cache.aclose()


async def test_a_second_process_reads_the_entry_with_the_time_it_has_left_and_expiry_is_shared(tmp_path):
    clock = Clock()
    path = tmp_path / "cache.db"
    writer = TieredResultCache(MemoryResultCache(), SQLiteResultCache(path, max_bytes=1 << 20, clock=clock))
    reader = TieredResultCache(MemoryResultCache(), SQLiteResultCache(path, max_bytes=1 << 20, clock=clock))
    await writer.set("k", result("crispr off-target").with_(fetched_at=clock.t), 120)  # NEWS' TTL
    clock.t += 100
    hits = CACHE_LOOKUPS.labels("hit")._value.get()
    found = await reader.shared.lookup("k")
    assert found is not None and found[1] == pytest.approx(20)
    back = await reader.get("k")
    assert back is not None and back.fetched_at == 1_800_000_000.0 and back.query == ""
    assert CACHE_LOOKUPS.labels("hit")._value.get() == hits + 1  # one lookup over both levels
    clock.t += 21
    assert await writer.shared.lookup("k") is None  # expired for every process
    await writer.aclose()
    await reader.aclose()


async def test_the_file_never_holds_the_query_text(tmp_path):
    from zarniwoop.storage.privacy import query_hash

    clock = Clock()
    path = tmp_path / "cache.db"
    cache = SQLiteResultCache(path, max_bytes=1 << 20, clock=clock)
    query = "unmistakable-secret-phrase"
    await cache.set(("scope", query_hash(query)), result("t").with_(query=query), 600)
    await cache.aclose()
    for suffix in ("", "-wal"):
        if os.path.exists(f"{path}{suffix}"):
            assert query.encode() not in Path(f"{path}{suffix}").read_bytes()


async def test_an_unreadable_file_is_started_afresh_not_a_failed_start(tmp_path):
    path = tmp_path / "cache.db"
    path.write_bytes(b"not a database" * 500)
    cache = SQLiteResultCache(path, max_bytes=1 << 20, clock=Clock())
    assert await cache.get("k") is None
    await cache.set("k", result("t"), 60)
    assert (await cache.get("k")).hits[0].title == "t"
    await cache.aclose()


async def test_redis_cache_is_bounded_by_max_bytes_with_lru(redis_config):
    from zarniwoop.dispatch.cache_redis import RedisResultCache
    from zarniwoop.limits.redis_state import open_redis

    state = open_redis(redis_config["redis_url"], redis_config["redis_prefix"])
    size = len(encode_result(result("t00")))  # every entry's size (two-digit tags)
    cache = RedisResultCache(state, max_bytes=10 * size)
    try:
        for i in range(10):
            await cache.set(i, result(f"t{i:02d}"), 60)
        assert (await cache.get(0)).hits[0].title == "t00"  # renewed: 1 is the oldest now
        for i in range(10, 15):
            await cache.set(i, result(f"t{i:02d}"), 60)
        assert await cache.stored_bytes() <= 10 * size
        assert [i for i in range(15) if await cache.get(i) is not None] == [0, *range(6, 15)]
        found = await cache.lookup(14)
        assert found is not None and 59 < found[1] <= 60
        await cache.clear()
        assert await cache.stored_bytes() == 0 and await cache.get(14) is None
    finally:
        await state.aclose()


async def test_a_query_echoed_in_an_error_is_redacted_before_it_is_stored(tmp_path):
    from zarniwoop.contract import Attempt, Outcome

    query = "zyxqueryone qvxquerytwo"
    echoed = result("t").with_(
        query=query,
        attempts=(
            Attempt("arxiv", Outcome.HARD_ERROR, "malformed query all:zyxqueryone AND all:qvxquerytwo"),
            Attempt("t", Outcome.SUCCESS),
        ),
    )
    path = tmp_path / "cache.db"
    cache = SQLiteResultCache(path, max_bytes=1 << 20, clock=Clock())
    await cache.set("k", echoed, 600)
    back = await cache.get("k")
    assert (
        back is not None and back.attempts[0].error_message == "malformed query all:<query> AND all:<query>"
    )
    await cache.aclose()
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("cache.db*"))
    assert b"zyxqueryone" not in stored and b"qvxquerytwo" not in stored

"""The embedded result cache is bounded by bytes, evicts the least recently used, and counts it."""

from __future__ import annotations

import pytest

from zarniwoop.contract import Modality, SearchHit, SearchResult, Tier
from zarniwoop.dispatch.cache import MemoryResultCache, encode_result
from zarniwoop.observability.metrics import CACHE_EVICTIONS, CACHE_LOOKUPS

pytestmark = pytest.mark.anyio


def result(tag: str, text_bytes: int = 1000) -> SearchResult:
    hit = SearchHit(
        title=tag,
        url=f"https://example.org/{tag}",
        snippet="x" * text_bytes,
        source="t",
        modality=Modality.WEB,
    )
    return SearchResult(
        query=tag, modality=Modality.WEB, tier=Tier.NORMAL, provider_instance_id="t", hits=(hit,)
    )


async def test_bytes_stay_under_the_bound_and_the_least_recently_used_goes_first():
    size = len(encode_result(result("a")))
    cache = MemoryResultCache(max_bytes=3 * size + 10)
    evicted = CACHE_EVICTIONS.labels("size")._value.get()
    for tag in "abc":
        await cache.set(tag, result(tag), 60)
    assert cache.bytes == 3 * size
    assert (await cache.get("a")).hits[0].title == "a"  # touch a: b is now the oldest
    await cache.set("d", result("d"), 60)
    assert cache.bytes <= cache.max_bytes
    assert await cache.get("b") is None
    assert [(await cache.get(t)).hits[0].title for t in "acd"] == ["a", "c", "d"]
    assert CACHE_EVICTIONS.labels("size")._value.get() == evicted + 1


async def test_an_oversized_result_is_not_cached_and_expiry_counts_as_a_miss():
    cache = MemoryResultCache(max_bytes=10_000)
    await cache.set("big", result("big", text_bytes=20_000), 60)
    assert cache.bytes == 0 and await cache.get("big") is None
    misses = CACHE_LOOKUPS.labels("miss")._value.get()
    await cache.set("old", result("old"), -1)  # already expired
    assert await cache.get("old") is None and cache.bytes == 0
    assert CACHE_LOOKUPS.labels("miss")._value.get() == misses + 1


async def test_a_cached_result_round_trips_without_the_callers_query():
    cache = MemoryResultCache()
    await cache.set("k", result("q"), 60)
    back = await cache.get("k")
    assert back.query == "" and back.hits == result("q").hits and back.cached is False

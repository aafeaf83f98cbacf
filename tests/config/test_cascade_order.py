"""The cascade order where no routing setting says more is stable: writing any single setting of any
endpoint (a rate, a timeout, a key, a contact address …) never moves that endpoint (issue 13)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarniwoop.contract import Modality, SearchScope
from zarniwoop.dispatch.ordering import order_candidates

from ..support.runtime import open_runtime

SCOPE = SearchScope("acme", "review")
LEVELS = {"system": ("_system", "_tenant"), "tenant": ("acme", "_tenant"), "project": ("acme", "review")}
SUFFIX_VALUES = {
    "timeoutMs": st.integers(1, 60_000).map(str),
    "rateLimit.perSecond": st.integers(1, 50).map(str),
    "quota.daily": st.integers(1, 10_000).map(str),
    "quota.monthly": st.integers(1, 100_000).map(str),
    "hedge": st.sampled_from(["true", "false"]),
    "enabled": st.just("true"),
    "apiKey": st.text("abcdef0123456789", min_size=8, max_size=16),
    "contactEmail": st.just("research@example.org"),
    "userAgent": st.just("zarniwoop-test/1.0"),
}


async def _orders(rt) -> dict[Modality, list[str]]:
    provider_set = await rt.factory.providers(SCOPE)
    return {m: [i.id for i in order_candidates(provider_set, m)] for m in Modality}


def test_writing_one_setting_of_an_endpoint_never_moves_it(tmp_path: Path):
    async def setup():
        rt = await open_runtime(tmp_path, {})
        return rt, await _orders(rt), sorted((await rt.factory.providers(SCOPE)).instances)

    loop = asyncio.new_event_loop()
    rt, before, endpoints = loop.run_until_complete(setup())

    @settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        endpoint=st.sampled_from(endpoints),
        level=st.sampled_from(sorted(LEVELS)),
        suffix_value=st.sampled_from(sorted(SUFFIX_VALUES)).flatmap(
            lambda s: st.tuples(st.just(s), SUFFIX_VALUES[s])
        ),
    )
    def check(endpoint: str, level: str, suffix_value: tuple[str, str]) -> None:
        suffix, value = suffix_value
        tenant, project = LEVELS[level]
        key = f"research.endpoint.{endpoint}.{suffix}"

        async def once() -> dict[Modality, list[str]]:
            await rt.settings.set(tenant, project, key, value)
            try:
                return await _orders(rt)
            finally:
                await rt.settings.delete(tenant, project, key)

        assert loop.run_until_complete(once()) == before, f"{key} = {value!r} at {level} moved the cascade"

    try:
        check()
    finally:
        loop.run_until_complete(rt.aclose())
        loop.close()


def test_an_explicit_order_and_definition_order_place_configured_endpoints(tmp_path: Path):
    async def body():
        settings = {
            "research.endpoint.wiki-b.protocol": "wikipedia",
            "research.endpoint.wiki-a.protocol": "wikipedia",
            "research.endpoint.wikipedia.rateLimit.perSecond": 1,  # touching a built-in: no move
        }
        async with await open_runtime(tmp_path, settings) as rt:
            assert (await _orders(rt))[Modality.ENCYCLOPEDIA] == ["wiki-b", "wiki-a", "wikipedia"]
            await rt.settings.set("_system", "_tenant", "research.endpoint.wikipedia.order", 1)
            assert (await _orders(rt))[Modality.ENCYCLOPEDIA] == ["wikipedia", "wiki-b", "wiki-a"]

    asyncio.run(body())


def test_the_global_order_is_computed_once_per_provider_set_and_follows_a_settings_change(tmp_path: Path):
    async def body():
        settings = {
            "research.endpoint.wiki-b.protocol": "wikipedia",
            "research.endpoint.wiki-a.protocol": "wikipedia",
        }
        async with await open_runtime(tmp_path, settings) as rt:
            first = await rt.factory.providers(SCOPE)
            order = order_candidates(first, Modality.ENCYCLOPEDIA)
            assert [i.id for i in order] == ["wiki-b", "wiki-a", "wikipedia"]
            assert list(first.orders) == [(Modality.ENCYCLOPEDIA, None)]
            order.clear()  # a caller's list is its own: the memo is untouched
            again = order_candidates(first, Modality.ENCYCLOPEDIA)
            assert [i.id for i in again] == ["wiki-b", "wiki-a", "wikipedia"]
            assert [i.id for i in order_candidates(first, Modality.ENCYCLOPEDIA, "de")] == [
                "wiki-b",
                "wiki-a",
                "wikipedia",
            ]
            assert len(first.orders) == 2  # by locale too
            await rt.settings.set("_system", "_tenant", "research.default.encyclopedia", "wiki-a")
            second = await rt.factory.providers(SCOPE)
            assert second is not first and not second.orders  # a new settings generation, a new memo
            assert [i.id for i in order_candidates(second, Modality.ENCYCLOPEDIA)] == [
                "wiki-a",
                "wiki-b",
                "wikipedia",
            ]

    asyncio.run(body())

"""The dispatcher's contract (DESIGN §5), end to end over real HTTP against the loopback emulator."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime

import pytest

from zarniwoop.config.keys import cooldown_subject
from zarniwoop.contract import Modality, Outcome, SearchRequest, SearchScope
from zarniwoop.dispatch.dispatcher import provenance_footer
from zarniwoop.limits.clock import Clock
from zarniwoop.limits.pacing import cell_of
from zarniwoop.views.providers import provider_entries

from ..support.bodies import openalex_works, wikipedia_pages
from ..support.clock import ahead_of_pace
from ..support.emulator import Reply
from ..support.runtime import cascade, endpoint, only, open_runtime

pytestmark = pytest.mark.anyio
SCOPE = SearchScope()


def two_openalex(emulator, **extra):
    return cascade(
        "academic",
        endpoint("oa-a", "openalex", f"{emulator.url}/a", **extra),
        endpoint("oa-b", "openalex", f"{emulator.url}/b", **extra),
    )


def tried(result):
    """The attempts except built-in endpoints the test disabled."""
    return [a for a in result.attempts if a.outcome is not Outcome.SKIPPED_DISABLED]


def academic(query="crispr off-target", **kw):
    return SearchRequest.create(query, "academic", **kw)


async def test_hard_error_falls_over_then_cooldown_skips_without_a_request(tmp_path, emulator):
    emulator.add("/a/works", Reply(status=503))
    emulator.add("/b/works", Reply.json(openalex_works(2)))
    async with await open_runtime(tmp_path, two_openalex(emulator)) as rt:
        first = await rt.dispatcher.search(academic(), SCOPE)
        assert [(a.provider_instance_id, a.outcome) for a in first.attempts] == [
            ("oa-a", Outcome.HARD_ERROR),
            ("oa-b", Outcome.SUCCESS),
        ]
        assert first.attempts[0].error_message == "HTTP 503"
        assert first.provider_instance_id == "oa-b"
        assert [h.title for h in first.hits] == ["Work 1", "Work 2"]
        assert provenance_footer(first) == "(via oa-b — oa-a fell over)"

        second = await rt.dispatcher.search(academic("another query"), SCOPE)
        assert [(a.provider_instance_id, a.outcome) for a in second.attempts] == [
            ("oa-a", Outcome.SKIPPED_COOLDOWN),
            ("oa-b", Outcome.SUCCESS),
        ]
        assert second.attempts[0].duration_ms == 0
    assert len(emulator.requests("/a/works")) == 1  # the cooling instance got no second request
    assert len(emulator.requests("/b/works")) == 2


async def test_429_retry_after_cools_that_modality_only(tmp_path, emulator):
    emulator.add("/a/w/rest.php/v1/search/page", Reply.json({}, status=429, headers={"Retry-After": "7"}))
    settings = {
        **only(),
        **endpoint("wiki-a", "wikipedia", f"{emulator.url}/a"),
        "research.cache.ttlSeconds": 0,
    }
    async with await open_runtime(tmp_path, settings) as rt:
        before = time.time()
        result = await rt.dispatcher.search(SearchRequest.create("fermat", "encyclopedia"), SCOPE)
        assert [a.outcome for a in tried(result)] == [Outcome.HARD_ERROR]
        [entry] = [e for e in await provider_entries(rt.dispatcher, SCOPE, admin=True) if e["id"] == "wiki-a"]
        assert entry["availability"] == "COOLDOWN"
        assert [c["modality"] for c in entry["cooldowns"]] == ["ENCYCLOPEDIA"]
        cooldowns = await rt.dispatcher.cooldowns.get_many(
            SCOPE, [cooldown_subject("wiki-a", Modality.ENCYCLOPEDIA)]
        )
        until = next(iter(cooldowns.values())).until
        assert before + 6 <= until <= time.time() + 7.5

        emulator.add("/a/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Fermat")))
        web = await rt.dispatcher.search(SearchRequest.create("fermat", "web"), SCOPE)
        assert web.provider_instance_id == "wiki-a"
        assert [a.outcome for a in tried(web)] == [Outcome.SUCCESS]


async def test_expert_pinned_provider_never_cascades(tmp_path, emulator):
    emulator.add("/a/works", Reply(status=500))
    emulator.add("/b/works", Reply.json(openalex_works(1)))
    async with await open_runtime(tmp_path, two_openalex(emulator)) as rt:
        result = await rt.dispatcher.search(academic(pinned_provider_id="oa-a"), SCOPE)
        assert result.hits == ()
        assert result.error_message is not None and "oa-a: HTTP 500" in result.error_message
        assert [a.provider_instance_id for a in result.attempts] == [
            "oa-a"
        ]  # pinned: nothing else, not even skips
    assert emulator.requests("/b/works") == []


async def test_cooldown_never_shortens_and_panic_mode_tries_earliest(tmp_path, emulator):
    emulator.add("/a/works", Reply(status=429, headers={"Retry-After": "600"}))
    emulator.add("/b/works", Reply(status=503))
    async with await open_runtime(tmp_path, two_openalex(emulator)) as rt:
        await rt.dispatcher.search(academic(), SCOPE)  # a → 600 s, b → 30 s
        subjects = [cooldown_subject(i, Modality.ACADEMIC) for i in ("oa-a", "oa-b")]
        first = await rt.dispatcher.cooldowns.get_many(SCOPE, subjects)
        # Every candidate cooling down: panic mode tries the one whose cooldown ends first (b), once.
        panic = await rt.dispatcher.search(academic("q2"), SCOPE)
        assert [(a.provider_instance_id, a.outcome, a.panic) for a in tried(panic)] == [
            ("oa-a", Outcome.SKIPPED_COOLDOWN, False),
            ("oa-b", Outcome.SKIPPED_COOLDOWN, False),
            ("oa-b", Outcome.HARD_ERROR, True),
        ]
        assert panic.to_json()["attempts"][-1]["panic"] is True
        # A 60 s 429 on an instance benched for 600 s keeps the 600 s.
        emulator.add("/a/works", Reply(status=429, headers={"Retry-After": "60"}))
        await rt.dispatcher.search(academic("q3", pinned_provider_id="oa-a"), SCOPE)
        after = await rt.dispatcher.cooldowns.get_many(SCOPE, subjects)
        assert after[subjects[0]].until >= first[subjects[0]].until
        # b failed again: its streak doubled the backoff (30 s → 60 s).
        assert after[subjects[1]].streak == 2
        assert after[subjects[1]].until - first[subjects[1]].until >= 29
    assert len(emulator.requests("/b/works")) == 2


async def test_pacing_keeps_each_second_under_the_rate(tmp_path, emulator):
    emulator.add("/a/works", Reply.json(openalex_works(1)))
    settings = {**two_openalex(emulator), "research.endpoint.oa-a.rateLimit.perSecond": 2}
    async with await open_runtime(tmp_path, settings) as rt:
        asked = time.monotonic()  # the emulator's clock
        results = await asyncio.gather(*(rt.dispatcher.search(academic(f"q{i}"), SCOPE) for i in range(10)))
    assert all(r.provider_instance_id == "oa-a" for r in results)
    times = [r.at for r in emulator.requests("/a/works")]
    assert len(times) == 10
    assert ahead_of_pace(times, asked, cell_of(2).interval) == []  # one start per 0.525 s, never sooner


async def test_hanging_provider_times_out_at_the_deadline(tmp_path, emulator):
    emulator.add("/a/works", Reply(hang=True))
    settings = {
        **two_openalex(emulator),
        "research.deadlineMs": 2000,
        "research.endpoint.oa-a.timeoutMs": 30000,
    }
    settings.pop("research.fallback.academic")
    settings["research.endpoint.oa-b.enabled"] = False
    async with await open_runtime(tmp_path, settings) as rt:
        begin = time.monotonic()
        result = await rt.dispatcher.search(academic(), SCOPE)
        elapsed = time.monotonic() - begin
    assert elapsed >= 1.9  # waited for the deadline (a lower bound: a busy machine only adds)
    assert [(a.provider_instance_id, a.outcome) for a in tried(result)] == [("oa-a", Outcome.TIMEOUT)]
    # ended by the 2 s deadline, not the instance's 30 s timeout: the search says which
    assert (result.note, tried(result)[0].error_message) == (
        "deadline of 2000 ms reached",
        "deadline reached",
    )
    assert result.error_message is not None


async def test_coalescing_and_cache(tmp_path, emulator):
    emulator.add("/a/works", Reply.json(openalex_works(3), delay=0.2))
    settings = {**two_openalex(emulator), "research.cache.ttlSeconds.academic": 60}
    async with await open_runtime(tmp_path, settings) as rt:
        results = await asyncio.gather(*(rt.dispatcher.search(academic(), SCOPE) for _ in range(50)))
        assert len(emulator.requests("/a/works")) == 1
        assert all(len(r.hits) == 3 for r in results)
        again = await rt.dispatcher.search(academic("  CRISPR   off-target "), SCOPE)
        assert again.cached is True
        assert again.to_json()["cached"] is True
        assert again.query == "CRISPR   off-target"
    assert len(emulator.requests("/a/works")) == 1


async def test_every_candidate_failing_names_each_reason(tmp_path, emulator):
    emulator.add("/a/works", Reply(status=502))
    emulator.add(
        "/b/works", Reply(body=b"{definitely not json", headers={"Content-Type": "application/json"})
    )
    async with await open_runtime(tmp_path, two_openalex(emulator)) as rt:
        result = await rt.dispatcher.search(academic(), SCOPE)
    assert result.hits == ()
    assert result.error_message is not None
    assert "oa-a: HTTP 502" in result.error_message
    assert "oa-b: openalex: body is not JSON" in result.error_message


async def test_soft_error_and_empty_move_on_without_cooldown(tmp_path, emulator):
    emulator.add("/a/works", Reply.json({"meta": {"count": 0}, "results": []}))
    emulator.add("/b/works", Reply.json(openalex_works(1)))
    async with await open_runtime(tmp_path, two_openalex(emulator)) as rt:
        result = await rt.dispatcher.search(academic(), SCOPE)
        assert [a.outcome for a in result.attempts][:2] == [Outcome.EMPTY, Outcome.SUCCESS]
        cooldowns = await rt.dispatcher.cooldowns.get_many(
            SCOPE, [cooldown_subject("oa-a", Modality.ACADEMIC)]
        )
        assert cooldowns == {}


async def test_hedging_races_a_slow_candidate(tmp_path, emulator):
    emulator.add("/a/works", Reply.json(openalex_works(1, "Slow"), delay=1.5))
    emulator.add("/b/works", Reply.json(openalex_works(1, "Fast")))
    settings = {**two_openalex(emulator), "research.hedge.afterMs": 200}
    async with await open_runtime(tmp_path, settings) as rt:
        asked = time.monotonic()  # the emulator's clock
        result = await rt.dispatcher.search(academic(), SCOPE)
    # B answered first, so it was raced before A's 1.5 s answer, and not before the 200 ms hedge
    # delay (a lower bound at the emulator, which a busy machine only widens)
    assert result.provider_instance_id == "oa-b"
    assert result.hits[0].title == "Fast 1"
    assert [b.at - asked >= 0.2 for b in emulator.requests("/b/works")] == [True]
    assert [(a.provider_instance_id, a.outcome) for a in result.attempts] == [
        ("oa-b", Outcome.SUCCESS),
        ("oa-a", Outcome.TIMEOUT),
    ]


class FixedDayClock(Clock):
    """Wall clock at noon UTC on 2025-03-10; waits stay real."""

    def now(self) -> float:
        return datetime(2025, 3, 10, 12, tzinfo=UTC).timestamp()


async def test_protocols_get_today_from_the_dispatchers_clock(tmp_path, emulator):
    body = {"query": "q", "results": [{"url": "https://a.example/n", "title": "N", "content": "x"}]}
    emulator.add("/sx/search", Reply.json(json.dumps(body).encode()))
    settings = {**only(), **endpoint("sx", "searxng", f"{emulator.url}/sx"), "research.default.news": "sx"}
    async with await open_runtime(tmp_path, settings) as rt:
        rt.dispatcher.clock = FixedDayClock()
        request = SearchRequest.create("q", "news", expert_params={"dateFrom": "2025-03-05"})
        result = await rt.dispatcher.search(request, SCOPE)
        assert [h.title for h in result.hits] == ["N"]
        [sent] = emulator.requests("/sx/search")
        assert sent.param("time_range") == "week"  # 5 days before the clock's day, not the machine's
        assert result.note == "dateFrom widened to time_range=week"

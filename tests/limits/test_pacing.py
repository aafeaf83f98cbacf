"""Issue 18: pacing with bursts (GCRA per endpoint and credential), measured at the emulator."""

from __future__ import annotations

import asyncio
import time

import pytest

from zarniwoop.contract import SearchRequest, SearchScope
from zarniwoop.limits.clock import Clock
from zarniwoop.limits.pacing import LocalPacer, cell_of
from zarniwoop.tools import Toolbox

from ..support.bodies import openalex_works
from ..support.clock import ahead_of_pace
from ..support.emulator import RecordedRequest, Reply
from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio
SCOPE = SearchScope()


class FakeClock(Clock):
    def __init__(self) -> None:
        self.t = 100.0

    def monotonic(self) -> float:
        return self.t


def test_gcra_starts_the_burst_then_the_sustained_pace():
    clock = FakeClock()
    limiter = LocalPacer(clock)
    waits = [limiter.take("k", 2, burst=4) for _ in range(7)]
    assert waits == pytest.approx([0, 0, 0, 0.525, 1.05, 1.575, 2.1])
    assert limiter.take("k", 2, max_wait=2.0, burst=4) is None  # 2.625 s away: nothing reserved
    clock.t += 10  # idle long enough: the whole burst is back
    assert [limiter.take("k", 2, burst=4) for _ in range(4)] == pytest.approx([0, 0, 0, 0.525])


def test_without_a_burst_calls_are_spaced_at_the_rate():
    limiter = LocalPacer(FakeClock())
    assert [limiter.take("k", 2) for _ in range(3)] == pytest.approx([0, 0.525, 1.05])
    assert [limiter.take("slow", 1 / 3) for _ in range(2)] == pytest.approx([0, 3.15])


async def test_burst_four_at_two_per_second_at_the_emulator(tmp_path, emulator):
    emulator.add("/a/works", Reply.json(openalex_works(1)))
    settings = {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/a", rateLimit__perSecond=2, rateLimit__burst=4),
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.academic": 0,
    }
    async with await open_runtime(tmp_path, settings) as rt:
        requests = [SearchRequest.create(f"q{i}", "academic") for i in range(10)]
        asked = time.monotonic()  # the emulator's clock
        results = await asyncio.gather(*(rt.dispatcher.search(r, SCOPE) for r in requests))
    assert [r.provider_instance_id for r in results] == ["oa"] * 10  # paced, none skipped
    times = sorted(r.at for r in emulator.requests("/a/works"))
    interval = cell_of(2, 4).interval
    # never sooner than the pace: 3 at once, then one per 0.525 s (a lower bound, by order)
    assert ahead_of_pace(times, asked, interval, at_once=3) == []
    # and the burst was used: the third call did not wait the two slots it would without one
    # (1.05 s of slack: what a busy machine would have to add to this one call to break it)
    assert times[2] < asked + 2 * interval, [round(t - asked, 3) for t in times]


SEARXNG_BODY = {
    "query": "aurora",
    "results": [
        {
            "url": f"https://example.org/{i}",
            "title": f"hit {i}",
            "content": "text",
            "img_src": f"https://example.org/{i}.jpg",
            "thumbnail": f"https://example.org/{i}-t.jpg",
            "iframe_src": f"https://example.org/{i}.mp4",
            "publishedDate": "2026-11-30T10:00:00",
            "engine": "bing",
        }
        for i in range(3)
    ],
}


async def test_rich_over_one_searxng_sends_its_four_calls_together(tmp_path, emulator):
    """A homelab set-up: web, image, video and news all on one SearXNG. SearXNG is not paced by
    default, so the four calls of one `research_rich` go out together — shown by order, not time:
    the emulator answers none of a round's calls before all four have arrived (calls sent one
    after another would leave the first unanswered, and the round would fail)."""
    path = "/s/search"

    def together(request: RecordedRequest) -> Reply:
        round_ = (len(emulator.requests(path)) - 1) // 4  # rounds are sequential: 4 calls each
        arrived = emulator.wait_for_requests(path, 4 * (round_ + 1), timeout=30)
        if len(arrived) < 4 * (round_ + 1):
            return Reply.json({"error": "the four calls did not go out together"}, status=503)
        return Reply.json(SEARXNG_BODY)

    emulator.add(path, together)
    settings = {
        **only(),
        **endpoint("sx", "searxng", f"{emulator.url}/s"),
        **{f"research.default.{m}": "sx" for m in ("web", "image", "video", "news")},
        "research.cache.ttlSeconds": 0,
        **{f"research.cache.ttlSeconds.{m}": 0 for m in ("web", "image", "video", "news")},
        "research.sx.timeoutMs": 60000,
        "research.deadlineMs": 60000,
    }
    async with await open_runtime(tmp_path, settings) as rt:
        toolbox = Toolbox(rt)
        for i in range(3):
            result = await toolbox.execute("research_rich", {"query": f"aurora {i}", "maxResults": 2}, SCOPE)
            groups = result.structured["results"]
            assert {k: (g["providerInstanceId"], len(g["hits"])) for k, g in groups.items()} == dict.fromkeys(
                ("WEB", "IMAGE", "VIDEO", "NEWS"), ("sx", 2)
            )
    assert len(emulator.requests(path)) == 12

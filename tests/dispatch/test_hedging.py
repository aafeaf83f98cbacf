"""Issue 18: hedging that learns — a candidate losing hedges in a row is benched; the default delay
is each endpoint's observed p95. Issue 27: an endpoint with a call hanging is raced at once."""

from __future__ import annotations

import asyncio
import collections
import time

import pytest

from zarniwoop.contract import Outcome, SearchRequest, SearchScope
from zarniwoop.dispatch.hedging import (
    COLD_SUSPECT_AFTER,
    FLOOR,
    LOSSES_TO_BENCH,
    MIN_SAMPLES,
    P95_FACTOR,
    HedgeLedger,
    p95,
)

from ..support.bodies import openalex_works
from ..support.clock import TestClock
from ..support.emulator import Reply
from ..support.runtime import cascade, endpoint, open_runtime

pytestmark = pytest.mark.anyio
SCOPE = SearchScope()
SEARCHES = 30
WARM_UP = LOSSES_TO_BENCH + 1


def settings_for(emulator, *, with_hanging: bool, **extra):
    ok = endpoint("oa-ok", "openalex", f"{emulator.url}/ok")
    if with_hanging:
        return {**cascade("academic", endpoint("oa-hang", "openalex", f"{emulator.url}/hang"), ok), **extra}
    return {**cascade("academic", ok), **extra}


async def searches(tmp_path, settings) -> list:
    results = []
    tmp_path.mkdir()
    async with await open_runtime(tmp_path, settings) as rt:
        for i in range(SEARCHES):
            results.append(await rt.dispatcher.search(SearchRequest.create(f"q{i}", "academic"), SCOPE))
    return results


async def test_a_hanging_default_stops_costing_the_hedge_delay(tmp_path, emulator):
    emulator.add("/hang/works", Reply(hang=True))
    emulator.add("/ok/works", Reply.json(openalex_works(1), delay=0.1))
    results = await searches(
        tmp_path / "a", settings_for(emulator, with_hanging=True, **{"research.hedge.afterMs": 200})
    )
    assert len(results) == SEARCHES
    assert all(r.provider_instance_id == "oa-ok" for r in results)
    # The first LOSSES_TO_BENCH searches race and cut the hanging default; the last of them benches it.
    for result in results[:LOSSES_TO_BENCH]:
        assert [(a.provider_instance_id, a.outcome) for a in result.attempts] == [
            ("oa-ok", Outcome.SUCCESS),
            ("oa-hang", Outcome.TIMEOUT),
        ]
    # After that the hanging default costs nothing: it is skipped (a skip costs no time, DESIGN §5)
    # and never raced, so no search waits for a hedge delay. Shown by the order of events, not by
    # wall time, which a busy machine stretches (issue 24).
    for result in results[LOSSES_TO_BENCH:]:
        assert [a.outcome for a in result.attempts] == [Outcome.SKIPPED_COOLDOWN, Outcome.SUCCESS]
        assert result.attempts[0].duration_ms == 0
    assert f"lost {LOSSES_TO_BENCH} hedges in a row" in results[LOSSES_TO_BENCH].attempts[0].error_message
    assert len(emulator.requests("/hang/works")) == LOSSES_TO_BENCH


async def test_a_hedge_that_loses_to_the_call_it_raced_is_never_benched(tmp_path, emulator):
    """The default is slow (past its hedge delay) but answers; the fallback, raced after 20 ms, never
    does first. The fallback lost each race only for starting later: no loss on its streak, so when
    the default then fails, the fallback answers (stop 35's CI: a busy machine slowed the paid default
    past its hedge delay, the free fallback was benched for losing, and once paid's quota ran out
    every search failed)."""
    emulator.add("/hang/works", Reply.json(openalex_works(1), delay=0.3))
    emulator.add("/ok/works", Reply(hang=True))
    settings = settings_for(emulator, with_hanging=True, **{"research.hedge.afterMs": 20})
    async with await open_runtime(tmp_path, settings) as rt:
        raced = [
            await rt.dispatcher.search(SearchRequest.create(f"q{i}", "academic"), SCOPE)
            for i in range(LOSSES_TO_BENCH + 2)
        ]
        emulator.add("/hang/works", Reply(status=503))
        emulator.add("/ok/works", Reply.json(openalex_works(1)))
        after = await rt.dispatcher.search(SearchRequest.create("after", "academic"), SCOPE)
    for result in raced:
        assert [(a.provider_instance_id, a.outcome) for a in result.attempts] == [
            ("oa-hang", Outcome.SUCCESS),
            ("oa-ok", Outcome.TIMEOUT),
        ]
        assert result.attempts[1].error_message == "cancelled: hedged, oa-hang answered first"
    assert [(a.provider_instance_id, a.outcome) for a in after.attempts] == [
        ("oa-hang", Outcome.HARD_ERROR),
        ("oa-ok", Outcome.SUCCESS),
    ]


async def test_a_win_resets_the_loss_streak():
    ledger = HedgeLedger()
    assert [ledger.lost(SCOPE, "s") for _ in range(LOSSES_TO_BENCH - 1)] == [False] * (LOSSES_TO_BENCH - 1)
    ledger.answered(SCOPE, "s", "oa", 0.1)
    assert [ledger.lost(SCOPE, "s") for _ in range(LOSSES_TO_BENCH)] == [False] * (LOSSES_TO_BENCH - 1) + [
        True
    ]
    assert ledger.lost(SCOPE, "s") is False  # benched: the streak starts again


async def test_default_hedge_delay_is_the_observed_p95_once_there_are_enough_answers():
    ledger = HedgeLedger()
    for i in range(MIN_SAMPLES - 1):
        ledger.answered(SCOPE, "s", "oa", 0.1 + i / 100)
    assert ledger.hedge_after("oa", None) is None  # too few answers to know its p95: no hedge
    ledger.answered(SCOPE, "s", "oa", 5.0)
    observed = p95(collections.deque([0.1 + i / 100 for i in range(19)] + [5.0]))
    assert observed == pytest.approx(0.28)  # the 19th of 20 sorted samples
    assert ledger.hedge_after("oa", None) == pytest.approx(max(FLOOR, P95_FACTOR * observed))
    assert ledger.hedge_after("oa", 250) == 0.25  # the setting overrides
    assert ledger.hedge_after("oa", 0) is None  # 0 = off
    assert ledger.hedge_after("unknown", None) is None


async def test_unset_hedge_delay_races_a_call_slower_than_its_p95(tmp_path, emulator):
    emulator.add("/a/works", Reply.json(openalex_works(1, "A"), delay=0.05))
    emulator.add("/b/works", Reply.json(openalex_works(1, "B")))
    settings = cascade(
        "academic",
        endpoint("oa-a", "openalex", f"{emulator.url}/a"),
        endpoint("oa-b", "openalex", f"{emulator.url}/b"),
    )
    async with await open_runtime(tmp_path, settings) as rt:
        for i in range(MIN_SAMPLES):
            first = await rt.dispatcher.search(SearchRequest.create(f"q{i}", "academic"), SCOPE)
            assert first.provider_instance_id == "oa-a"
        assert emulator.requests("/b/works") == []  # no p95 yet, then never slower than it: no hedge
        emulator.add("/a/works", Reply.json(openalex_works(1, "A"), delay=3.0))
        asked = time.monotonic()  # the emulator's clock
        raced = await rt.dispatcher.search(SearchRequest.create("slow", "academic"), SCOPE)
    # B won, so it was raced before A's 3 s answer came; and not before the floor of
    # max(0.5 s, 2 × p95): a lower bound at the emulator, which a busy machine only widens.
    assert raced.provider_instance_id == "oa-b"
    [b] = emulator.requests("/b/works")
    assert b.at - asked >= FLOOR


async def test_a_hanging_default_costs_one_timeout_to_at_most_the_first_five_of_200_searches_at_5_per_s(
    tmp_path, emulator
):
    """Hedging at its default (no `research.hedge.afterMs`, no p95 learned yet): while the hanging
    default's first call is outstanding past `COLD_SUSPECT_AFTER`, new searches race it at once;
    the races it loses bench it. Searches start at 5/s of the ledger's clock (injected), so which
    searches wait for the hang is decided by event order, not by how busy the machine is."""
    emulator.add("/hang/works", Reply(hang=True))
    emulator.add("/ok/works", Reply.json(openalex_works(1)))
    settings = settings_for(emulator, with_hanging=True)
    settings["research.endpoint.oa-hang.timeoutMs"] = 4000  # the first five's one timeout each
    for instance in ("oa-hang", "oa-ok"):  # no pacing in the way: 200 searches start in a burst
        settings[f"research.endpoint.{instance}.rateLimit.perSecond"] = 1000
    ticks = TestClock(start=0.0)
    async with await open_runtime(tmp_path, settings) as rt:
        rt.dispatcher.hedges = HedgeLedger(ticks)
        searches = []
        for i in range(200):
            ticks.t = i / 5
            calls = rt.dispatcher.hedges.outstanding(SCOPE, "oa-hang")
            racing = rt.dispatcher.hedges.suspect(SCOPE, "oa-hang")
            task = asyncio.create_task(rt.dispatcher.search(SearchRequest.create(f"q{i}", "academic"), SCOPE))
            searches.append(task)
            # as at 5/s of wall time: a search that does not wait for the hang is over before the
            # next one starts; one that waits has its call to the hanging default out
            while not task.done() and (racing or rt.dispatcher.hedges.outstanding(SCOPE, "oa-hang") == calls):
                await asyncio.sleep(0.001)
        results = await asyncio.gather(*searches)
    assert [r.provider_instance_id for r in results] == ["oa-ok"] * 200
    waited = [i for i, r in enumerate(results) if r.attempts[0].outcome is Outcome.TIMEOUT]
    # started within COLD_SUSPECT_AFTER of the hang (0, 0.2, 0.4, 0.6 s): one timeout each
    assert waited == [0, 1, 2, 3]
    first = len(waited)
    raced = [i for i, r in enumerate(results) if [a.outcome for a in r.attempts][:1] == [Outcome.SUCCESS]]
    skipped = [i for i, r in enumerate(results) if r.attempts[0].outcome is Outcome.SKIPPED_COOLDOWN]
    # raced at once: the fallback answered, the hanging call was cut as a hedged loser ...
    for i in raced:
        assert [(a.provider_instance_id, a.outcome) for a in results[i].attempts] == [
            ("oa-ok", Outcome.SUCCESS),
            ("oa-hang", Outcome.TIMEOUT),
        ]
        assert results[i].attempts[1].error_message.startswith("cancelled: hedged")
    # ... until it lost LOSSES_TO_BENCH races in a row (or its first call timed out): benched, skipped
    assert raced == list(range(first, first + LOSSES_TO_BENCH))
    assert skipped == list(range(first + LOSSES_TO_BENCH, 200))
    assert (
        f"lost {LOSSES_TO_BENCH} hedges in a row"
        in results[first + LOSSES_TO_BENCH].attempts[0].error_message
    )
    assert len(emulator.requests("/hang/works")) == first + LOSSES_TO_BENCH


async def test_suspicion_starts_past_the_hedge_delay_and_ends_with_an_answer():
    ticks = TestClock(start=0.0)
    ledger = HedgeLedger(ticks)
    ledger.started(SCOPE, "oa", "c1")
    ticks.t = COLD_SUSPECT_AFTER - 0.01
    assert ledger.suspect(SCOPE, "oa") is False  # not yet: no p95, so the documented default
    ticks.t = COLD_SUSPECT_AFTER
    assert ledger.suspect(SCOPE, "oa") is True
    ledger.started(SCOPE, "oa", "c2")
    ledger.answered(SCOPE, "s", "oa", 0.1)  # another call answered: it is not hanging
    assert ledger.suspect(SCOPE, "oa") is False
    ticks.t += COLD_SUSPECT_AFTER  # c2, started before that answer, does not count; c1 neither
    assert ledger.suspect(SCOPE, "oa") is False
    ledger.started(SCOPE, "oa", "c3")
    ticks.t += COLD_SUSPECT_AFTER
    assert ledger.suspect(SCOPE, "oa") is True
    for call in ("c1", "c2", "c3"):
        ledger.ended(SCOPE, "oa", call)
    assert ledger.suspect(SCOPE, "oa") is False and ledger.outstanding(SCOPE, "oa") == 0
    # once it has a p95, the threshold is its hedge delay
    for _ in range(MIN_SAMPLES):
        ledger.answered(SCOPE, "s", "oa", 0.1)
    ticks.t += 0.01
    ledger.started(SCOPE, "oa", "c4")
    ticks.t += FLOOR - 0.01
    assert ledger.suspect(SCOPE, "oa") is False
    ticks.t += 0.01
    assert ledger.suspect(SCOPE, "oa") is True

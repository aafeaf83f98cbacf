"""One flight per search across processes (`dispatch/flights.py`), on each shared store: the
embedded cache file (two connections = two processes) and Redis. Event order, not wall time: which
process called, how often, and that a dead leader's follower called only after its lease ended."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

from zarniwoop.contract import Modality, SearchHit, SearchResult, Tier
from zarniwoop.dispatch.cache import cache_digest
from zarniwoop.dispatch.cache_sql import SQLiteFlights, SQLiteResultCache
from zarniwoop.dispatch.flights import Flights, FlightStore, FlightWaitExpiredError
from zarniwoop.limits.clock import Clock

from ..support.waiting import until_async

pytestmark = pytest.mark.anyio
LEASE = 0.3
"""Short leases, so that a dead leader's lease runs out quickly; nothing is timed against it."""


def result(tag: str) -> SearchResult:
    hit = SearchHit(
        title=tag, url=f"https://example.org/{tag}", snippet="s", source="t", modality=Modality.WEB
    )
    return SearchResult(
        query="", modality=Modality.WEB, tier=Tier.NORMAL, provider_instance_id="t", hits=(hit,)
    )


@pytest.fixture(params=["sqlite", "redis"])
async def stores(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[list[FlightStore]]:
    """Two handles on one shared store, as two processes have."""
    if request.param == "sqlite":
        caches = [SQLiteResultCache(tmp_path / "cache.db", max_bytes=1 << 20, clock=Clock()) for _ in "ab"]
        flights = [SQLiteFlights(c) for c in caches]
        for f in flights:  # members, as a runtime's store is: each sees the other, so both lease
            await f.join()
        yield flights
        for c in caches:
            await c.aclose()
        return
    from zarniwoop.dispatch.flights_redis import RedisFlights
    from zarniwoop.limits.redis_state import open_redis

    config = request.getfixturevalue("redis_config")
    states = [open_redis(config["redis_url"], config["redis_prefix"]) for _ in "ab"]
    yield [RedisFlights(s) for s in states]
    for s in states:
        await s.aclose()


class Seen:
    """A follower's store, recording what it saw: the holder each claim returned and each watch's
    `(now, live holder)` — the events the tests wait for instead of sleeping."""

    def __init__(self, store: FlightStore) -> None:
        self.store = store
        self.claims: list[str | None] = []
        self.watches: list[tuple[float, str | None]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def claim(self, key: bytes, owner: str, now: float, lease: float, since: float) -> str | None:
        holder = await self.store.claim(key, owner, now, lease, since)
        self.claims.append(holder)
        return holder

    async def watch(self, key: bytes, holder: str, now: float) -> tuple[str | None, bytes | None]:
        live, body = await self.store.watch(key, holder, now)
        self.watches.append((now, live))
        return live, body


class Calls:
    def __init__(self) -> None:
        self.log: list[tuple[str, float]] = []
        self.release = asyncio.Event()

    def call(self, who: str, *, hold: bool = False, fail: bool = False) -> Any:
        async def run() -> SearchResult:
            self.log.append((who, Clock().now()))
            if hold:
                await self.release.wait()
            if fail:
                raise ValueError("bad request")
            return result(who)

        return run


async def test_followers_take_the_live_leaders_answer_and_never_call(stores):
    # a longer lease than the others use: it is renewed every lease/4, and a busy machine may stall a
    # renewal for a few hundred ms; the wait below still outlasts the lease, so renewal is what holds it
    live = 1.0
    seen = Seen(stores[1])
    a, b = Flights(stores[0], Clock(), lease=live), Flights(seen, Clock(), lease=live)
    calls = Calls()
    claimed = Clock().now()  # no later than the leader's claim
    leader = asyncio.create_task(a.run("k", calls.call("a", hold=True), wait=30))
    while not calls.log:  # the leader's call is out
        await asyncio.sleep(0.005)
    followers = [asyncio.create_task(b.run("k", calls.call(f"b{i}"), wait=30)) for i in range(5)]
    # until a follower found the leader alive half a lease after its first lease ran out: only
    # renewals hold it that long (an unrenewed lease is over for the store by then, and a
    # follower would have called instead)
    await until_async(
        lambda: any(now > claimed + 1.5 * live and holder is not None for now, holder in seen.watches),
        "a follower's watch to see the renewed lease",
    )
    assert [who for who, _ in calls.log] == ["a"]
    calls.release.set()
    assert (await leader) == (result("a"), False)
    answers = await asyncio.gather(*followers)
    assert [(r.hits[0].title, followed) for r, followed in answers] == [("a", True)] * 5
    assert [who for who, _ in calls.log] == ["a"]


async def test_a_dead_leaders_lease_runs_out_and_one_follower_calls_once(stores):
    """What a killed process leaves: a lease nobody renews or gives up."""
    digest = cache_digest(("flight", "k"))
    dead_until = Clock().now() + LEASE
    assert await stores[0].claim(digest, "dead", Clock().now(), LEASE, Clock().now()) == "dead"
    a, b = (Flights(s, Clock(), lease=LEASE) for s in stores)
    calls = Calls()
    answers = await asyncio.gather(
        *(
            flights.run("k", calls.call(f"{name}{i}"), wait=30)
            for i in range(3)
            for name, flights in (("a", a), ("b", b))
        )
    )
    assert len(calls.log) == 1
    [(who, started)] = calls.log
    assert started >= dead_until  # not before the dead lease ended
    assert sorted(followed for _, followed in answers) == [False] + [True] * 5
    assert {r.hits[0].title for r, _ in answers} == {who}


async def test_a_follower_waits_no_longer_than_its_wait_and_does_not_call_beside_a_live_leader(stores):
    a, b = (Flights(s, Clock(), lease=LEASE) for s in stores)
    calls = Calls()
    leader = asyncio.create_task(a.run("k", calls.call("a", hold=True), wait=30))
    while not calls.log:
        await asyncio.sleep(0.005)
    with pytest.raises(FlightWaitExpiredError):
        await b.run("k", calls.call("b"), wait=2 * LEASE)
    assert [who for who, _ in calls.log] == ["a"]
    calls.release.set()
    await leader


async def test_a_leader_whose_call_raised_leaves_each_follower_to_call_itself(stores):
    seen = Seen(stores[1])
    a, b = Flights(stores[0], Clock(), lease=LEASE), Flights(seen, Clock(), lease=LEASE)
    calls = Calls()
    leader = asyncio.create_task(a.run("k", calls.call("a", hold=True, fail=True), wait=30))
    while not calls.log:
        await asyncio.sleep(0.005)
    follower = asyncio.create_task(b.run("k", calls.call("b"), wait=30))
    await until_async(lambda: seen.watches, "the follower to follow the leader")
    calls.release.set()
    with pytest.raises(ValueError):
        await leader
    assert await follower == (result("b"), False)
    assert [who for who, _ in calls.log] == ["a", "b"]


async def test_a_store_that_fails_is_no_flight_at_all():
    class Down:
        async def claim(self, *args: Any) -> str | None:
            raise ConnectionError("store down")

    calls = Calls()
    flights = Flights(Down(), Clock())  # type: ignore[arg-type]
    assert await flights.run("k", calls.call("a"), wait=1) == (result("a"), False)
    assert [who for who, _ in calls.log] == ["a"]


async def test_a_search_begun_after_a_flight_finished_starts_a_new_one(stores):
    a, b = (Flights(s, Clock(), lease=LEASE) for s in stores)
    calls = Calls()
    assert await a.run("k", calls.call("a"), wait=30) == (result("a"), False)
    assert await b.run("k", calls.call("b"), wait=30) == (result("b"), False)
    assert [who for who, _ in calls.log] == ["a", "b"]


async def published(store: FlightStore) -> int:
    """Results a store holds for followers (rows or keys)."""
    if isinstance(store, SQLiteFlights):
        db = await store.cache.ready()
        row = await db.fetchone("SELECT count(*) FROM flights WHERE result IS NOT NULL")
        return int(row[0]) if row else 0
    return len(await store.state.client.keys(store.state.key("flightresult", "*")))  # type: ignore[attr-defined]


async def test_a_leader_nobody_waited_for_publishes_nothing_and_one_that_was_waited_for_does(stores):
    """The common case, one process alone on a request, costs a claim and a release: no result is
    encoded or stored for nobody. A follower that claimed during the flight makes it publish."""
    seen = Seen(stores[1])
    a, b = Flights(stores[0], Clock(), lease=1.0), Flights(seen, Clock(), lease=1.0)
    calls = Calls()
    assert await a.run("alone", calls.call("a"), wait=30) == (result("a"), False)
    assert await published(stores[0]) == 0
    leader = asyncio.create_task(a.run("k", calls.call("a2", hold=True), wait=30))
    while len(calls.log) < 2:  # the leader's call is out
        await asyncio.sleep(0.005)
    follower = asyncio.create_task(b.run("k", calls.call("b"), wait=30))
    await until_async(lambda: seen.claims, "the follower's claim")  # it found the live lease: it waits
    calls.release.set()
    assert (await leader)[1] is False and (await follower) == (result("a2"), True)
    assert await published(stores[0]) == 1
    assert [who for who, _ in calls.log] == ["a", "a2"]


async def test_a_process_alone_on_the_file_takes_no_lease_until_another_joins(tmp_path: Any) -> None:
    """A lone member has nobody to share a call with: it writes no lease row. One that joins is
    seen by the next search, and leases resume for both; once it leaves, they stop again."""
    caches = [SQLiteResultCache(tmp_path / "cache.db", max_bytes=1 << 20, clock=Clock()) for _ in "ab"]
    sa, sb = (SQLiteFlights(c) for c in caches)
    a, b = (Flights(s, Clock(), lease=1.0, grace=0.0) for s in (sa, sb))  # both up for long
    await a.join()
    calls = Calls()
    leases: list[Any] = []

    async def peek() -> SearchResult:  # the call looks at the file while its flight is out
        leases.extend(await (await caches[0].ready()).fetchall("SELECT owner FROM flights"))
        return await calls.call("a")()

    assert await a.run("k", peek, wait=5) == (result("a"), False)
    assert leases == [] and await sa.shared() is False
    await b.join()
    leader = asyncio.create_task(a.run("k", calls.call("a", hold=True), wait=30))
    while len(calls.log) < 2:  # the leader's call is out, under its lease
        await asyncio.sleep(0.005)
    follower = asyncio.create_task(b.run("k", calls.call("b"), wait=30))
    db = await caches[0].ready()
    while await db.fetchall("SELECT waiters FROM flights") != [(1,)]:  # b counted itself a waiter
        await asyncio.sleep(0.005)
    calls.release.set()
    assert (await leader)[1] is False and (await follower) == (result("a"), True)
    assert [who for who, _ in calls.log] == ["a", "a"]
    await b.leave()
    assert await sa.shared() is False
    for c in caches:
        await c.aclose()


async def test_a_process_that_just_joined_leases_so_that_one_starting_beside_it_follows(
    tmp_path: Any,
) -> None:
    """Processes that start together (a burst of CLI calls) join moments apart: the first, alone
    when it looked, still leases in its first `JOIN_GRACE_SECONDS`, and the second, joining while
    that call is out, follows it instead of calling again."""
    caches = [SQLiteResultCache(tmp_path / "cache.db", max_bytes=1 << 20, clock=Clock()) for _ in "ab"]
    a, b = (Flights(SQLiteFlights(c), Clock(), lease=1.0) for c in caches)
    await a.join()
    calls = Calls()
    leader = asyncio.create_task(a.run("k", calls.call("a", hold=True), wait=30))
    while not calls.log:  # the lone process's call is out
        await asyncio.sleep(0.005)
    db = await caches[0].ready()
    assert [owner.split(":")[0] for (owner,) in await db.fetchall("SELECT owner FROM flights")] == [
        str(os.getpid())
    ]
    await b.join()
    follower = asyncio.create_task(b.run("k", calls.call("b"), wait=30))
    while await db.fetchall("SELECT waiters FROM flights") != [(1,)]:  # b counted itself a waiter
        await asyncio.sleep(0.005)
    calls.release.set()
    assert (await leader)[1] is False and (await follower) == (result("a"), True)
    assert [who for who, _ in calls.log] == ["a"]
    for c in caches:
        await c.aclose()

"""State shared by replicas through Redis: cooldowns, quota counters, result cache, reachability.

The multi-process tests start real `zarniwoop` processes with separate homes (separate SQLite
files), so whatever they share, they share through Redis alone."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zarniwoop.contract import SearchRequest, SearchScope
from zarniwoop.contract.errors import ProviderHTTPError, RateLimitedError
from zarniwoop.dispatch.cache_redis import RedisResultCache
from zarniwoop.dispatch.cooldown_redis import RedisCooldownStore
from zarniwoop.dispatch.reachability import LastOutcome
from zarniwoop.dispatch.reachability_redis import RedisReachability
from zarniwoop.limits.budgets_redis import RedisCallBudgets
from zarniwoop.limits.call_budgets import BudgetWindow
from zarniwoop.limits.pacing import cell_of
from zarniwoop.limits.redis_state import open_redis

from ..support.bodies import openalex_works
from ..support.cli import run_cli
from ..support.clock import ahead_of_pace
from ..support.emulator import Reply
from ..support.runtime import cascade, endpoint, only, open_runtime, write_config

pytestmark = pytest.mark.anyio
SCOPE = SearchScope("acme", "review")
REPO = Path(__file__).resolve().parents[2]
ZARNIWOOP = str(Path(sys.executable).parent / "zarniwoop")


@pytest.fixture
async def state(redis_config):
    # 8 connections, not the default 64: 200 concurrent scripts still interleave over several
    # connections, and 64 connections opened at once to a Redis starved by stress-ng outlasted the
    # 2 s connect timeout (the outage policy, tested in its own tests) and failed the atomicity test;
    # for the same reason the reads get a generous timeout here (a load of 20 outlasted 2 s)
    shared = open_redis(
        redis_config["redis_url"], redis_config["redis_prefix"], max_connections=8, timeout=120.0
    )
    try:
        yield shared
    finally:
        await shared.aclose()


async def test_cooldown_script_streak_never_shortens_and_is_atomic(state):
    store = RedisCooldownStore(state)
    error = ProviderHTTPError(503, "HTTP 503")
    first = await store.record_failure(SCOPE, "research:a:web", error, "HTTP 503", 1000.0)
    second = await store.record_failure(SCOPE, "research:a:web", error, "HTTP 503", 1001.0)
    assert (first.until, first.streak, second.until, second.streak) == (1030.0, 1, 1061.0, 2)
    long = await store.record_failure(SCOPE, "research:b:web", RateLimitedError(600, "429"), "429", 1000.0)
    short = await store.record_failure(SCOPE, "research:b:web", RateLimitedError(5, "429"), "429", 1001.0)
    assert short.until == long.until == 1600.0
    # 20 replicas failing at once: every failure counts (no lost read-modify-write)
    await asyncio.gather(
        *(store.record_failure(SCOPE, "research:c:web", error, "503", 2000.0) for _ in range(20))
    )
    got = await store.get_many(
        SCOPE, ["research:a:web", "research:b:web", "research:c:web", "research:d:web"]
    )
    assert sorted(got) == ["research:a:web", "research:b:web", "research:c:web"]
    assert got["research:c:web"].streak == 20
    assert got["research:c:web"].until == 2000.0 + 600  # 30 s doubling, capped at 10 min
    assert got["research:a:web"].reason == "HTTP 503"
    await store.record_success(SCOPE, "research:a:web")
    assert "research:a:web" not in await store.get_many(SCOPE, ["research:a:web"])
    await store.clear(SCOPE)
    assert await store.get_many(SCOPE, ["research:b:web", "research:c:web"]) == {}


async def test_quota_script_is_atomic_and_all_or_nothing(state):
    counters = RedisCallBudgets(state)
    resets = time.time() + 3600
    day = BudgetWindow("_system", "_tenant", "day", "2025-04-02", 100, resets)
    grants = await asyncio.gather(*(counters.reserve("serper", [day], 0.0) for _ in range(200)))
    assert sorted(g[0] for g in grants if g is not None) == list(range(1, 101))
    assert grants.count(None) == 100
    assert await counters.used("serper", [day]) == [100]
    small_month = BudgetWindow("_system", "_tenant", "month", "2025-04", 1, resets)
    roomy_day = BudgetWindow("_system", "_tenant", "day", "2025-04-03", 10, resets)
    assert await counters.reserve("brave", [roomy_day, small_month], 0.0) == [1, 1]
    assert await counters.reserve("brave", [roomy_day, small_month], 0.0) is None
    assert await counters.used("brave", [roomy_day, small_month]) == [1, 1]  # the refused call took nothing
    await counters.charge("brave", roomy_day, 4, 0.0)
    assert await counters.used("brave", [roomy_day]) == [5]
    ttl = await state.client.ttl(counters._key("serper", day))
    assert 3600 < ttl <= 7200  # gone an hour after the window resets


async def test_cache_and_reachability_are_shared_and_keep_no_query(state, tmp_path, emulator, redis_config):
    emulator.add("/a/works", Reply.json(openalex_works(2)))
    settings = {
        **only(),
        **endpoint("oa-a", "openalex", f"{emulator.url}/a"),
        "research.default.academic": "oa-a",
    }
    query = "zebra-plaintext-marker crispr"
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    async with (
        await open_runtime(tmp_path / "one", settings, **redis_config) as one,
        await open_runtime(tmp_path / "two", settings, **redis_config) as two,
    ):
        first = await one.dispatcher.search(SearchRequest.create(query, "academic"), SearchScope())
        second = await two.dispatcher.search(SearchRequest.create(query, "academic"), SearchScope())
        assert (first.cached, second.cached) == (False, True)
        assert second.query == query and [h.title for h in second.hits] == ["Work 1", "Work 2"]
        outcomes = await two.dispatcher.outcomes(SearchScope(), ["oa-a", "openalex"])
        assert list(outcomes) == ["oa-a"] and outcomes["oa-a"].ok is True
    assert len(emulator.requests("/a/works")) == 1
    stored = b""
    async for key in state.client.scan_iter(match=state.prefix + "*"):
        stored += key
        kind = await state.client.type(key)
        if kind == b"string":
            stored += await state.client.get(key) or b""
        elif kind == b"hash":
            stored += b"".join(v for v in (await state.client.hgetall(key)).values())
    assert b"Work 1" in stored  # the cached result is there…
    assert b"zebra-plaintext-marker" not in stored  # …without the query


async def test_reachability_round_trip(state):
    store = RedisReachability(state)
    await store.record(SCOPE, "serper", LastOutcome(False, "HTTP 503", 1000.5))
    assert await store.get_many(SCOPE, ["serper", "brave"]) == {
        "serper": LastOutcome(False, "HTTP 503", 1000.5)
    }
    assert await store.get_many(SearchScope("other", "p"), ["serper"]) == {}


async def test_result_cache_entry_expires(state):
    cache = RedisResultCache(state)
    from zarniwoop.contract import Modality, Tier
    from zarniwoop.contract.results import SearchResult

    result = SearchResult("q", Modality.WEB, Tier.NORMAL, "x")
    await cache.set(("k",), result, 0.2)
    assert (await cache.get(("k",))).provider_instance_id == "x"
    await asyncio.sleep(0.3)
    assert await cache.get(("k",)) is None


# -- real processes ------------------------------------------------------------------------------


def _config(tmp_path: Path, name: str, settings: dict, redis_config: dict) -> tuple[Path, Path]:
    folder = tmp_path / name
    folder.mkdir()
    return write_config(folder, {"settings": settings, **redis_config}), folder / "home"


def _bursts_in_two_processes(
    tmp_path: Path, settings: dict, redis_config: dict, *, count: int, went: list[float] | None = None
) -> list[dict]:
    """Two real dispatcher processes sharing Redis, each running `count` concurrent searches, started
    together behind a file barrier; returns every finished search's line (process a's first).
    `went` receives the barrier's opening (`time.monotonic()`): no search started before it."""
    go = tmp_path / "go"
    children = []
    for name in ("a", "b"):
        config, home = _config(tmp_path, name, settings, redis_config)
        ready = tmp_path / f"ready-{name}"
        children.append(
            (
                ready,
                subprocess.Popen(
                    [sys.executable, "-m", "tests.support.burst", str(config), str(home), "--count", str(count),
                     "--concurrency", str(count), "--ready-file", str(ready), "--go-file", str(go)],
                    cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                ),
            )
        )  # fmt: skip
    deadline = time.monotonic() + 60
    while not all(ready.exists() for ready, _ in children) and time.monotonic() < deadline:
        time.sleep(0.02)
    if went is not None:
        went.append(time.monotonic())
    go.touch()
    lines = []
    for _, child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        lines += [json.loads(line) for line in out.splitlines()]
    return lines


def _zarniwoop(config: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ZARNIWOOP_HOME": str(home)}
    return subprocess.run(
        [ZARNIWOOP, "--config", str(config), *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_a_cooldown_set_in_process_a_makes_process_b_skip(tmp_path, emulator, redis_config):
    emulator.add("/a/works", Reply(status=503))
    emulator.add("/b/works", Reply.json(openalex_works(1)))
    settings = cascade(
        "academic",
        endpoint("oa-a", "openalex", f"{emulator.url}/a"),
        endpoint("oa-b", "openalex", f"{emulator.url}/b"),
    )
    config_a, home_a = _config(tmp_path, "a", settings, redis_config)
    config_b, home_b = _config(tmp_path, "b", settings, redis_config)

    a = _zarniwoop(config_a, home_a, "search", "first query", "-m", "academic", "--json")
    assert a.returncode == 0, a.stderr
    attempts_a = [(x["providerInstanceId"], x["outcome"]) for x in json.loads(a.stdout)["attempts"]]
    assert ("oa-a", "hard_error") in attempts_a

    # B in-process (support/cli.py): A stays the real process (and the suite's one run of the
    # installed console script), so what B sees did cross a process boundary, through Redis alone.
    b = run_cli("--config", str(config_b), "search", "second query", "-m", "academic", "--json", home=home_b)
    assert b.code == 0, b.stderr
    attempts_b = [(x["providerInstanceId"], x["outcome"]) for x in json.loads(b.stdout)["attempts"]]
    assert ("oa-a", "skipped_cooldown") in attempts_b
    assert ("oa-b", "success") in attempts_b
    assert len(emulator.requests("/a/works")) == 1  # B never called the benched instance

    providers = run_cli("--config", str(config_b), "providers", "--json", home=home_b)
    [entry] = [e for e in json.loads(providers.stdout)["providers"] if e["id"] == "oa-a"]
    assert entry["availability"] == "COOLDOWN"
    assert entry["reachable"] is False  # A's last outcome, seen by B
    assert entry["lastError"] == "HTTP 503"
    assert not (home_a / "zarniwoop.db").samefile(home_b / "zarniwoop.db")


def test_200_searches_in_two_processes_against_a_quota_of_100(tmp_path, emulator, redis_config):
    emulator.add("/q/works", Reply.json(openalex_works(1), delay=0.01))
    settings = cascade(
        "academic",
        endpoint("oa-q", "openalex", f"{emulator.url}/q", quota__daily=100, rateLimit__perSecond=10000),
    )
    # both processes start their 100 concurrent searches at once
    lines = _bursts_in_two_processes(tmp_path, settings, redis_config, count=100)
    assert len(lines) == 200
    served = [line["provider"] for line in lines]
    assert served.count("oa-q") == 100
    exhausted = [line for line in lines if ["oa-q", "skipped_exhausted"] in line["attempts"]]
    assert len(exhausted) == 100
    assert len(emulator.requests("/q/works")) == 100
    # each process got some of the budget: the counter really was shared
    per_process = [sum(1 for line in out if line["provider"] == "oa-q") for out in (lines[:100], lines[100:])]
    assert sum(per_process) == 100


async def test_searches_survive_a_redis_outage(tmp_path, emulator, redis_config, caplog, monkeypatch):
    from zarniwoop.limits import redis_state

    from ..support.tcp_proxy import TcpProxy

    # Redis's own timeouts (2 s connect and read, 5 s for a pooled connection) made ten times
    # longer than the guard below: a search that waited one out could not finish inside it, on
    # any machine, where a margin over a healthy run measured in seconds decided by the machine
    pool = redis_state.aioredis.BlockingConnectionPool
    from_url = pool.from_url
    patient = {"timeout": 600.0, "socket_connect_timeout": 600.0, "socket_timeout": 600.0}
    monkeypatch.setattr(pool, "from_url", lambda url, **kwargs: from_url(url, **{**kwargs, **patient}))

    emulator.add("/a/works", Reply.json(openalex_works(1)))
    url = redis_config["redis_url"]
    host_port, db = url.removeprefix("redis://").split("/")
    proxy = TcpProxy("127.0.0.1", int(host_port.split(":")[1])).start()
    proxied = {**redis_config, "redis_url": f"redis://127.0.0.1:{proxy.port}/{db}"}
    settings = {
        **only(),
        **endpoint("oa-a", "openalex", f"{emulator.url}/a", quota__daily=100),
        "research.default.academic": "oa-a",
    }
    try:
        async with await open_runtime(tmp_path, settings, **proxied) as rt:
            assert (
                await rt.dispatcher.search(SearchRequest.create("before", "academic"), SearchScope())
            ).hits

            async def five(phase: str) -> None:
                for i in range(5):
                    result = await rt.dispatcher.search(
                        SearchRequest.create(f"{phase} {i}", "academic"), SearchScope()
                    )
                    assert result.provider_instance_id == "oa-a" and result.error_message is None

            await five("healthy")
            proxy.stop()
            # five searches with Redis down wait for none of its timeouts (each 600 s now)
            await asyncio.wait_for(five("during"), timeout=60)
    finally:
        proxy.stop()
    assert len(emulator.requests("/a/works")) == 11
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert {r.name for r in errors} <= {
        "zarniwoop.limits.call_budgets",
        "zarniwoop.limits.pacing_redis",
        "zarniwoop.dispatch.dispatcher",
        "zarniwoop.dispatch.cache_redis",
        "zarniwoop.dispatch.flights",
    }
    assert len(errors) == len(
        {(r.name, r.getMessage().split(" unavailable")[0]) for r in errors}
    )  # once each


def test_pacing_is_shared_by_two_processes(tmp_path, emulator, redis_config):
    """Two replicas, one credential at 2 requests/s: together they stay at 2 per second."""
    emulator.add("/p/works", Reply.json(openalex_works(1)))
    settings = {
        **only(),
        **endpoint("oa-p", "openalex", f"{emulator.url}/p", rateLimit__perSecond=2),
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.academic": 0,
    }
    went: list[float] = []
    lines = _bursts_in_two_processes(tmp_path, settings, redis_config, count=4, went=went)
    assert [line["provider"] for line in lines] == ["oa-p"] * 8  # nobody failed for pacing
    # Measured where the provider counts: at the emulator, against the barrier's opening (see
    # ahead_of_pace). Paced per process instead, two requests would share each 0.525 s slot and the
    # second arrival would already be early; unpaced, all 8 would arrive within a few ms.
    times = [r.at for r in emulator.requests("/p/works")]
    assert len(times) == 8
    assert ahead_of_pace(times, went[0], cell_of(2).interval) == []  # (index, s after the barrier)
    # The key never reaches Redis: pacing keys carry a digest, and there is no key here anyway.


async def test_pacing_keys_carry_a_digest_of_the_credential_never_the_credential():
    from zarniwoop.limits.pacing import pace_key

    key = pace_key("serper", "serper-main", "sk-live-SECRET")
    assert "SECRET" not in key
    assert key == pace_key("serper", "serper-main", "sk-live-SECRET")  # stable across processes
    assert key != pace_key("serper", "serper-main", "sk-live-OTHER")


async def test_redis_pacing_is_a_gcra_with_a_burst_on_redis_clock(state):
    """Burst 4 at 2/s: three slots at once, then one every 0.525 s (as `pacing.LocalPacer`)."""
    from zarniwoop.limits.pacing import LocalPacer
    from zarniwoop.limits.pacing_redis import RedisPacer

    limiter = RedisPacer(state, LocalPacer())
    begin = time.monotonic()
    waits = [await limiter.reserve("k", 2, max_wait=10, burst=4) for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    # Each wait is its slot (0.525 s apart on Redis's clock) less the time since the first call,
    # which this test measures rather than assumes (a busy machine spreads the five calls out).
    spent = time.monotonic() - begin
    assert all(slot - spent <= wait <= slot for wait, slot in zip(waits[3:], (0.525, 1.05), strict=True)), (
        waits
    )
    # the next slot is 1.575 s after the first call, further than 0.1 s away: not taken
    assert await limiter.reserve("k", 2, max_wait=0.1, burst=4) is None
    sixth = await limiter.reserve("k", 2, max_wait=10, burst=4)  # the refused one took no slot
    assert sixth is not None and 1.575 - (time.monotonic() - begin) <= sixth <= 1.575

"""The one failure classification (limits/failure_policy.py): what each kind means to search cooldowns
and to LLM failover, the two Retry-After caps, and the Lua doubling against the Python one."""

from __future__ import annotations

import itertools

import pytest

from zarniwoop.contract import SearchScope, errors
from zarniwoop.dispatch.cooldown import SQLCooldownStore
from zarniwoop.dispatch.cooldown_redis import RedisCooldownStore
from zarniwoop.limits.failure_policy import (
    COOLDOWN_HINT_CAP,
    FAILURES,
    IN_CALL_WAIT_CAP,
    Backoff,
    Failure,
    bench,
    classify,
    is_transient,
    retry_wait,
)
from zarniwoop.limits.redis_state import open_redis
from zarniwoop.storage.db import SQLiteDatabase


def dns_error() -> errors.TransportError:
    error = errors.TransportError("no such host")
    error.cause = "dns"
    return error


@pytest.mark.parametrize(
    ("error", "kind", "transient"),
    [
        (errors.RateLimitedError(7), Failure.RATE_LIMITED, True),
        (errors.ProviderOverloadedError(529), Failure.OVERLOADED, True),
        (errors.ProviderHTTPError(502), Failure.SERVER, True),
        (errors.TransportError("reset"), Failure.NETWORK, True),
        (errors.ProviderTimeoutError("slow"), Failure.NETWORK, True),
        (dns_error(), Failure.UNRESOLVED, False),
        (errors.ProviderHTTPError(404), Failure.CLIENT, False),
        (errors.AuthError(401), Failure.AUTH, False),
        (errors.ParseError("junk"), Failure.MALFORMED, False),
        (errors.ResponseTooLargeError("big"), Failure.MALFORMED, False),
        (errors.ProviderError("stream said error"), Failure.PROVIDER, True),
        (KeyError("a parser bug"), Failure.FAULT, False),
    ],
)
def test_each_failure_has_one_kind_and_one_answer_for_both_uses(error, kind, transient):
    assert classify(error) == kind
    assert is_transient(error) is transient
    assert FAILURES[kind].retry is transient


def test_every_kind_has_a_row():
    assert set(FAILURES) == set(Failure)


def test_the_two_retry_after_caps():
    """A search bench follows a 429's hint up to an hour; an LLM call waits at most a minute, and a
    longer hint switches providers instead of being shortened."""
    assert (COOLDOWN_HINT_CAP, IN_CALL_WAIT_CAP) == (3600.0, 60.0)
    assert bench(errors.RateLimitedError(86400)) == Backoff(3600.0, 3600.0)
    assert bench(errors.RateLimitedError(-5)) == Backoff(0.0, 0.0)
    assert retry_wait(errors.RateLimitedError(60), 1, 1.0, IN_CALL_WAIT_CAP) == 60.0
    assert retry_wait(errors.RateLimitedError(61), 1, 1.0, IN_CALL_WAIT_CAP) is None
    assert retry_wait(errors.ProviderOverloadedError(529, retry_after=3), 1, 1.0, IN_CALL_WAIT_CAP) == 3.0
    assert bench(errors.ProviderOverloadedError(529, retry_after=900)) == Backoff(
        30.0, 600.0
    )  # a 5xx to search


def test_llm_backoff_doubles_from_the_first_delay_to_30_s():
    waits = [retry_wait(errors.ProviderHTTPError(500), n, 2.0, IN_CALL_WAIT_CAP) for n in range(1, 7)]
    assert waits == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert retry_wait(errors.AuthError(403), 1, 2.0, IN_CALL_WAIT_CAP) is None


BASES = [0.0, 0.001, 0.5, 1.0, 7.0, 30.0, 60.0, 300.0, 1800.0, 3600.0, 1e300]
CAPS = [0.0, 0.5, 30.0, 600.0, 3600.0, 1e308]
STREAKS = [*range(-1, 70), 1000, 1024, 1025, 5000, 10**6]


@pytest.fixture
async def redis_state(redis_config):
    state = open_redis(redis_config["redis_url"], redis_config["redis_prefix"])
    try:
        yield state
    finally:
        await state.aclose()


@pytest.mark.anyio
async def test_the_lua_doubling_is_the_python_one_over_many_inputs(redis_state):
    """The formula the Redis cooldown script embeds (`Backoff.lua_seconds`), run by Redis's Lua over
    a grid of bases, caps and streaks, gives exactly what `Backoff.seconds` gives."""
    script = redis_state.script(
        "local base, cap, streak = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])\n"
        f"return string.format('%.17g', {Backoff.lua_seconds('base', 'cap', 'streak')})"
    )
    inputs = list(itertools.product(BASES, CAPS, STREAKS))
    async with redis_state.client.pipeline(transaction=False) as pipe:
        for base, cap, streak in inputs:
            await script(keys=[], args=[repr(base), repr(cap), streak], client=pipe)
        answers = await pipe.execute()
    mismatches = [
        (base, cap, streak, float(answer), Backoff(base, cap).seconds(streak))
        for (base, cap, streak), answer in zip(inputs, answers, strict=True)
        if float(answer) != Backoff(base, cap).seconds(streak)
    ]
    assert len(inputs) == 5016
    assert mismatches == []


@pytest.mark.anyio
async def test_the_redis_and_sql_stores_bench_alike(redis_state, tmp_path):
    """Every kind of failure, 12 times in a row on one subject: the Redis script and the SQL store
    give the same deadline and streak each time."""
    db = SQLiteDatabase(tmp_path / "c.db")
    await db.migrate()
    stores = SQLCooldownStore(db), RedisCooldownStore(redis_state)
    failures = [
        errors.RateLimitedError(None),
        errors.RateLimitedError(7200),
        errors.AuthError(401),
        errors.ParseError("junk"),
        errors.ProviderHTTPError(503),
        dns_error(),
        errors.ProviderError("x"),
    ]
    try:
        for n, error in enumerate(failures):
            scope, subject = SearchScope("t", f"p{n}"), "research:x:web"
            for streak in range(1, 13):
                now = 1000.0 + 7 * streak
                sql, redis = [await s.record_failure(scope, subject, error, "r", now) for s in stores]
                assert (redis.until, redis.streak) == (sql.until, sql.streak) == (sql.until, streak)
    finally:
        await db.aclose()

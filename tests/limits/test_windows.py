"""Admission windows (`requests_per_minute` / `tokens_per_minute`): the local, SQL and Redis forms
admit and refuse alike; the SQL form — the embedded default — is one window for every process on
the database, so separate CLI processes without Redis share it (two connections at once; CLI calls
in-process, each opening its own runtime on one home as a process does); a store outage fails open."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from zarniwoop.contract.errors import DatabaseUnavailableError, RateLimitExceededError
from zarniwoop.limits.windows import LocalAdmissionWindows, RateLine
from zarniwoop.limits.windows_sql import SQLAdmissionWindows
from zarniwoop.runtime import Runtime
from zarniwoop.storage.db import SQLiteDatabase, apply_migrations

from ..llm.test_rate_limits import reply, tenant_config
from ..support.cli import Ran, run_cli
from ..support.llm import ANTHROPIC_PATH
from ..support.runtime import write_config

pytestmark = pytest.mark.anyio

REQUESTS = RateLine("project", "review", "requests", 3)
TOKENS = RateLine("account", "ann", "tokens", 1000)


class FakeClock:
    """The injected clock: one reading for wall and monotonic time, moved by the test."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture(params=["local", "sqlite", "postgres"])
def backend(request) -> tuple[str, str | None]:
    """Which form; PostgreSQL's URL is taken here, outside the event loop (it skips, saying why)."""
    return request.param, request.getfixturevalue("postgres_url") if request.param == "postgres" else None


@pytest.fixture
async def windows(backend, tmp_path) -> AsyncIterator[tuple[object, FakeClock]]:
    clock = FakeClock()
    form, url = backend
    if form == "local":
        yield LocalAdmissionWindows(clock), clock  # type: ignore[arg-type]
        return
    if url is None:
        db: object = SQLiteDatabase(tmp_path / "w.db")
        await apply_migrations(db)  # type: ignore[arg-type]
    else:
        from zarniwoop.storage.postgres import PostgresDatabase

        db = PostgresDatabase(url)
        await db.migrate()
    yield SQLAdmissionWindows(db, clock=clock), clock  # type: ignore[arg-type]
    await db.aclose()  # type: ignore[attr-defined]


async def test_windows_slide_and_say_when_there_is_room(windows):
    limiter, clock = windows
    for _ in range(3):
        await limiter.admit("acme", [REQUESTS], 10, window=60)
        clock.t += 10
    with pytest.raises(RateLimitExceededError) as caught:
        await limiter.admit("acme", [REQUESTS], 10, window=60)
    assert (caught.value.level, caught.value.retry_after) == ("project", 30.0)  # the first leaves at +60
    clock.t += 30
    await limiter.admit("acme", [REQUESTS], 10, window=60)


async def test_all_lines_or_none_and_settle_corrects_the_tokens(windows):
    limiter, _clock = windows
    first = await limiter.admit("acme", [TOKENS, REQUESTS], 600, window=60)
    with pytest.raises(RateLimitExceededError) as caught:
        await limiter.admit("acme", [REQUESTS, TOKENS], 600, window=60)
    assert caught.value.level == "account"
    await limiter.settle(first, 100)  # the call used far less than it reserved
    second = await limiter.admit("acme", [REQUESTS, TOKENS], 600, window=60)
    # The refused admission left nothing behind: two requests are counted, not three.
    await limiter.admit("acme", [REQUESTS], 0, window=60)
    with pytest.raises(RateLimitExceededError):
        await limiter.admit("acme", [REQUESTS], 0, window=60)
    await limiter.release(second)  # a released attempt leaves every line
    await limiter.admit("acme", [REQUESTS, TOKENS], 900, window=60)  # 100 + 900 ≤ 1000


async def test_two_connections_to_one_database_share_one_window(tmp_path):
    """What two processes see: two connections to one SQLite file, one window between them."""
    clock = FakeClock()
    first, second = SQLiteDatabase(tmp_path / "w.db"), SQLiteDatabase(tmp_path / "w.db")
    await apply_migrations(first)
    try:
        a = SQLAdmissionWindows(first, clock=clock)  # type: ignore[arg-type]
        b = SQLAdmissionWindows(second, clock=clock)  # type: ignore[arg-type]
        admitted = await asyncio.gather(
            *(w.admit("acme", [REQUESTS], 0, window=60) for w in (a, b, a, b)), return_exceptions=True
        )
        assert sorted(type(x).__name__ for x in admitted) == ["RateLimitExceededError", *["RateTicket"] * 3]
    finally:
        await first.aclose()
        await second.aclose()


class _UnreachableDatabase:
    """A database whose every statement fails as an unreachable PostgreSQL does."""

    dialect = "postgres"

    def transaction(self):
        raise DatabaseUnavailableError("PostgreSQL at 127.0.0.1:1/x unreachable: ConnectionRefusedError")

    async def execute(self, sql, params=()):
        raise DatabaseUnavailableError("unreachable")


async def test_policy_windows_fail_open_to_the_local_window_when_the_database_is_unreachable(caplog):
    clock = FakeClock()
    limiter = SQLAdmissionWindows(_UnreachableDatabase(), clock=clock)  # type: ignore[arg-type]
    tickets = [await limiter.admit("acme", [REQUESTS], 0, window=60) for _ in range(3)]
    assert all(t.local for t in tickets)  # admitted by this process's own window …
    with pytest.raises(RateLimitExceededError):  # … which still holds the limit
        await limiter.admit("acme", [REQUESTS], 0, window=60)
    await limiter.release(tickets[0])  # settled where it was admitted
    await limiter.admit("acme", [REQUESTS], 0, window=60)
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "rate windows fail open" in errors[0].getMessage()  # logged once


def _ask(config: Path, home: Path) -> Ran:
    return run_cli(
        *("--config", str(config), "--tenant", "acme", "llm", "ask", "Classify this abstract."),
        *("--account", "ann", "--json"),
        home=home,
        env={"COLUMNS": "200"},  # the refusal on one line
    )


def test_cli_calls_on_one_home_share_requests_per_minute_without_redis_the_sixth_is_refused(
    tmp_path, emulator
):
    """`requests_per_minute: 5` on the tenant, no Redis, one ZARNIWOOP_HOME (the embedded SQLite):
    six CLI calls, each with a runtime of its own as each process has — five are answered, the sixth
    is refused (exit 4, the limit named) and never reaches the provider. (Two connections admitting
    at once: `test_two_connections_to_one_database_share_one_window`.)"""
    emulator.add(ANTHROPIC_PATH, reply)
    tree = tenant_config(emulator, 60)  # the default window: one minute
    tree["tenants"]["acme"]["llm"]["quota"]["requests_per_minute"] = 5
    del tree["settings"]["ai.rateLimit.windowSeconds"]
    config = write_config(tmp_path, tree)
    home = tmp_path / "home"

    async def prepare() -> None:
        async with await Runtime.open(config, home=home):
            pass  # database, master key and the inline key sealed before the calls

    asyncio.run(prepare())
    calls = [_ask(config, home) for _ in range(6)]
    codes = sorted(c.code for c in calls)
    assert codes == [0, 0, 0, 0, 0, 4], [c.stderr for c in calls]
    [refused] = [c for c in calls if c.code == 4]
    assert "rate limit reached" in refused.stderr and "allows 5 requests per minute" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert all(json.loads(c.stdout)["text"] == "topic 3" for c in calls if c.code == 0)
    assert len(emulator.requests(ANTHROPIC_PATH)) == 5

"""The `Database` contract, run on both backends: SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from zarniwoop.config.settings import SettingService
from zarniwoop.contract import SearchScope
from zarniwoop.contract.errors import ConfigError, ProviderHTTPError, RateLimitedError
from zarniwoop.dispatch.cooldown import SQLCooldownStore
from zarniwoop.storage.db import SQLiteDatabase, _split_sql, migration_scripts, open_database
from zarniwoop.storage.postgres import split_url, translate_placeholders

pytestmark = pytest.mark.anyio


@pytest.fixture
async def db(database_url, tmp_path):
    database = open_database(database_url, tmp_path)
    await database.migrate()
    try:
        yield database
    finally:
        await database.aclose()


def test_every_sqlite_migration_has_a_postgres_twin():
    sqlite = [name for _, name, _ in migration_scripts("sqlite")]
    postgres = [name for _, name, _ in migration_scripts("postgres")]
    assert sqlite == postgres
    assert "0001_settings_cooldowns.sql" in postgres
    for _, _, sql in migration_scripts("postgres"):
        assert not [s for s in _split_sql(sql) if "AUTOINCREMENT" in s]


def test_placeholders_are_translated_outside_literals_only():
    sql = "SELECT a FROM t WHERE b = ? AND c = '?' AND \"d?\" = ? OR e IN (?, ?)"
    assert (
        translate_placeholders(sql)
        == "SELECT a FROM t WHERE b = $1 AND c = '?' AND \"d?\" = $2 OR e IN ($3, $4)"
    )


def test_schema_and_pool_size_parameters_are_ours_and_checked():
    assert split_url("postgresql://u@h:5432/db?schema=zw_1&application_name=x&pool_size=4") == (
        "postgresql://u@h:5432/db?application_name=x",
        "zw_1",
        4,
    )
    for bad in ("schema=a;drop", "pool_size=0", "pool_size=many"):
        with pytest.raises(ConfigError) as err:
            split_url(f"postgresql://u@h/db?{bad}")
        assert err.value.key == "database_url"


async def test_an_unreachable_or_unknown_postgres_is_a_config_error_at_start(tmp_path, postgres_schema_url):
    refused = open_database("postgresql://postgres@127.0.0.1:1/test", tmp_path)
    with pytest.raises(ConfigError) as err:
        await refused.migrate()
    assert err.value.key == "database_url"
    assert "cannot connect to PostgreSQL at 127.0.0.1:1/test" in err.value.reason
    await refused.aclose()
    base = postgres_schema_url.split("?", 1)[0].rsplit("/", 1)[0]
    missing = open_database(f"{base}/no_such_db_zw", tmp_path)
    with pytest.raises(ConfigError) as err:
        await missing.migrate()
    assert "InvalidCatalogNameError" in err.value.reason
    await missing.aclose()


async def test_migrate_is_versioned_and_idempotent(db):
    expected = [number for number, _, _ in migration_scripts(db.dialect)]
    assert await db.migrate() == max(expected)  # second run: nothing to apply
    rows = await db.fetchall("SELECT version, name FROM schema_version ORDER BY version")
    assert [r[0] for r in rows] == expected
    for table in ("settings", "cooldowns", "research_call_records", "quota_counters"):
        assert (await db.fetchone(f"SELECT COUNT(*) FROM {table}"))[0] == 0


async def test_round_trip_types_and_rowcount(db):
    rows = [("a", 1.5, 3, None), ("b", 2.25, 4, "x")]
    await db.executemany(
        "INSERT INTO cooldowns (tenant, project, subject, until_epoch, reason, streak, updated_at) "
        "VALUES ('t', 'p', ?, ?, 'r', ?, 0)",
        [(s, u, k) for s, u, k, _ in rows],
    )
    got = await db.fetchall("SELECT subject, until_epoch, streak FROM cooldowns ORDER BY subject")
    assert got == [("a", 1.5, 3), ("b", 2.25, 4)]
    assert await db.fetchone("SELECT subject FROM cooldowns WHERE subject = ?", ("zzz",)) is None
    assert await db.execute("DELETE FROM cooldowns WHERE streak >= ?", (3,)) == 2


async def test_transaction_commits_rolls_back_and_nests(db):
    insert = (
        "INSERT INTO cooldowns (tenant, project, subject, until_epoch, reason, streak, updated_at) "
        "VALUES ('t', 'p', ?, 1, 'r', 0, 0)"
    )
    async with db.transaction():
        await db.execute(insert, ("kept",))
        async with db.transaction():  # joins the outer one
            await db.execute(insert, ("nested",))
    with pytest.raises(RuntimeError):
        async with db.transaction():
            await db.execute(insert, ("lost",))
            raise RuntimeError("roll back")
    subjects = [r[0] for r in await db.fetchall("SELECT subject FROM cooldowns ORDER BY subject")]
    assert subjects == ["kept", "nested"]


async def test_a_write_batch_keeps_the_writes_around_one_the_database_refuses(db):
    """What a call's charge and its usage record need (llm/settlement.py `charge`): a refused write
    in the batch is undone alone, the others stand — one commit on SQLite, each write on its own on
    PostgreSQL (where a failed statement would abort a whole transaction)."""
    insert = (
        "INSERT INTO cooldowns (tenant, project, subject, until_epoch, reason, streak, updated_at) "
        "VALUES ('t', 'p', ?, 1, 'r', 0, 0)"
    )
    async with db.write_batch():
        await db.execute(insert, ("charge",))
        with pytest.raises(Exception):  # noqa: B017 — sqlite3.OperationalError or asyncpg's UndefinedTableError
            await db.execute("INSERT INTO no_such_table (x) VALUES (1)")
        await db.execute(insert, ("after",))
    subjects = [r[0] for r in await db.fetchall("SELECT subject FROM cooldowns ORDER BY subject")]
    assert subjects == ["after", "charge"]


async def test_executemany_is_all_or_nothing(db):
    insert = (
        "INSERT INTO cooldowns (tenant, project, subject, until_epoch, reason, streak, updated_at) "
        "VALUES ('t', 'p', ?, 1, 'r', 0, 0)"
    )
    with pytest.raises(Exception):  # noqa: B017 — sqlite3.IntegrityError or asyncpg.UniqueViolationError
        await db.executemany(insert, [("x",), ("y",), ("x",)])
    assert await db.fetchall("SELECT subject FROM cooldowns") == []


async def test_settings_cascade_on_each_backend(db):
    service = SettingService(db, None, {"research.deadlineMs": "20000"})
    await service.refresh()
    await service.set("_system", "_tenant", "research.default.academic", "openalex")
    await service.set("acme", "_tenant", "research.default.academic", "pubmed")
    await service.set("acme", "review", "research.deadlineMs", 5000)
    scoped = service.scoped(SearchScope("acme", "review"))
    assert scoped.get("research.default.academic") == "pubmed"
    assert scoped.get_int("research.deadlineMs", 0) == 5000
    assert service.scoped(SearchScope("other", "p")).get("research.default.academic") == "openalex"
    # another process's write is seen after a refresh (the fingerprint changed)
    other = SettingService(db, None, {})
    await other.refresh()
    await service.set("acme", "review", "research.deadlineMs", 6000)
    assert await other.refresh() is True
    assert other.scoped(SearchScope("acme", "review")).get("research.deadlineMs") == "6000"


async def test_cooldown_store_streak_and_never_shortens(db):
    store = SQLCooldownStore(db)
    scope = SearchScope("acme", "review")
    first = await store.record_failure(
        scope, "research:a:web", ProviderHTTPError(503, "HTTP 503"), "HTTP 503", 1000.0
    )
    second = await store.record_failure(
        scope, "research:a:web", ProviderHTTPError(503, "HTTP 503"), "HTTP 503", 1001.0
    )
    assert (first.until, first.streak) == (1030.0, 1)
    assert (second.until, second.streak) == (1061.0, 2)  # 30 s doubled
    long = await store.record_failure(scope, "research:b:web", RateLimitedError(600, "429"), "429", 1000.0)
    short = await store.record_failure(scope, "research:b:web", RateLimitedError(5, "429"), "429", 1001.0)
    assert short.until == long.until == 1600.0
    got = await store.get_many(scope, ["research:a:web", "research:b:web", "research:c:web"])
    assert sorted(got) == ["research:a:web", "research:b:web"]
    await store.record_success(scope, "research:a:web")
    assert sorted(await store.get_many(scope, ["research:a:web", "research:b:web"])) == ["research:b:web"]


async def test_concurrent_failures_count_every_streak_step(db, database_url, tmp_path: Path):
    """Read-modify-write in `transaction()` is atomic across connections (PostgreSQL: pool of 10)."""
    store = SQLCooldownStore(db)
    scope = SearchScope("acme", "p")
    error = ProviderHTTPError(503, "HTTP 503")
    await asyncio.gather(
        *(store.record_failure(scope, "research:x:web", error, "503", 1000.0) for _ in range(20))
    )
    [cooldown] = (await store.get_many(scope, ["research:x:web"])).values()
    assert cooldown.streak == 20


async def test_concurrent_transactions_neither_see_uncommitted_writes_nor_share_a_rollback(db):
    """Coroutines on one event loop, each in its own `transaction()` whose body awaits: a body sees
    only its own writes and committed ones, so does a reader outside any transaction, and the one
    that raises takes only its own write with it."""
    insert = (
        "INSERT INTO cooldowns (tenant, project, subject, until_epoch, reason, streak, updated_at) "
        "VALUES ('t', 'p', ?, 1, 'r', 0, 0)"
    )
    finished: set[str] = set()
    """Bodies that ended without raising (their transaction commits next)."""
    committed: set[str] = set()
    wrong: list[str] = []

    async def subjects() -> set[str]:
        return {r[0] for r in await db.fetchall("SELECT subject FROM cooldowns")}

    async def check(who: str, own: set[str]) -> None:
        before = set(committed)
        visible = await subjects() - own
        if not before <= visible <= finished:
            wrong.append(f"{who} saw {sorted(visible)}; committed before: {sorted(before)}")

    async def writer(name: str, *, fail: bool = False) -> None:
        try:
            async with db.transaction():
                await db.execute(insert, (name,))
                for _ in range(3):
                    await asyncio.sleep(0.01)  # the other coroutines run meanwhile
                    await check(name, {name})
                if fail:
                    raise RuntimeError("roll back")
                finished.add(name)
        except RuntimeError:
            return
        committed.add(name)

    async def reader() -> None:
        for _ in range(12):
            await check("reader", set())
            await asyncio.sleep(0.005)

    await asyncio.gather(writer("a"), writer("b", fail=True), writer("c"), reader())
    assert wrong == []
    assert await subjects() == {"a", "c"}
    assert committed == {"a", "c"}


async def test_sqlite_waits_for_another_writer_without_blocking_the_loop(tmp_path):
    """Another connection (another process, in production) holds the write lock: a write waits for
    it in `asyncio.sleep`, so the loop keeps running; after `busy_wait` it gives up as SQLite does."""
    # a budget no busy machine runs out of before the COMMIT at 0.3 s; giving up is shown below
    db = SQLiteDatabase(tmp_path / "z.db", busy_wait=60.0)
    await db.migrate()
    other = sqlite3.connect(tmp_path / "z.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    ticks: list[bool] = []  # per tick of the loop while the insert waits: is the other writer done?

    async def tick() -> None:
        while True:
            await asyncio.sleep(0.005)
            ticks.append(other.in_transaction)

    ticker = asyncio.create_task(tick())
    # the other writer commits from the event loop: the insert can only end once the loop ran
    asyncio.get_running_loop().call_later(0.3, other.execute, "COMMIT")
    begin = time.monotonic()
    async with db.transaction():
        await db.execute("INSERT INTO cooldowns VALUES ('t', 'p', 's', 1, 'r', 0, 0)")
    waited = time.monotonic() - begin
    ticker.cancel()
    # waited for the other writer's COMMIT (a lower bound), without blocking the event loop: it
    # ticked while the lock was still held (a blocked loop could not, on any machine), and the
    # COMMIT the insert waited for was the loop's own doing
    assert waited >= 0.3
    assert True in ticks
    assert await db.fetchall("SELECT subject FROM cooldowns") == [("s",)]

    other.execute("BEGIN IMMEDIATE")
    db.busy_wait = 0.1
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        await db.execute("DELETE FROM cooldowns")
    other.execute("ROLLBACK")
    other.close()
    await db.aclose()


def _rollback_journal_file_being_written(path: Path) -> sqlite3.Connection:
    """A new file still in SQLite's default journal mode, another connection in the middle of a
    write to it (as a process creating the same home a moment earlier): its RESERVED lock makes a
    switch to WAL fail at once, without SQLite's busy handler."""
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("CREATE TABLE early (x INTEGER)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO early VALUES (1)")
    return writer


def test_an_open_that_meets_another_processs_first_write_waits_for_it(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    writer = _rollback_journal_file_being_written(path)
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):  # what SQLite alone does
        sqlite3.connect(path, isolation_level=None, timeout=60).execute("PRAGMA journal_mode=WAL")
    threading.Timer(0.3, lambda: writer.execute("COMMIT")).start()
    db = SQLiteDatabase(path)  # retried until the writer committed
    try:
        assert db._conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db._conn.execute("SELECT x FROM early").fetchall() == [(1,)]
    finally:
        asyncio.run(db.aclose())
        writer.close()


def test_an_open_still_locked_after_the_busy_wait_names_the_database(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    writer = _rollback_journal_file_being_written(path)
    try:
        with pytest.raises(ConfigError) as raised:
            SQLiteDatabase(path, busy_wait=0.2)
        assert raised.value.key == "database_url"
        assert str(raised.value).endswith(f"cannot open SQLite database {path}: database is locked")
    finally:
        writer.close()

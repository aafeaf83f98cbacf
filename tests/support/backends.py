"""Fixtures for the scale-out backends: PostgreSQL and Redis, isolated per test run.

PostgreSQL tests run when `ZARNIWOOP_TEST_POSTGRES_URL` is set (`.ci/run` sets it): one fresh
schema per test session (dropped at the end), emptied after each test. Redis tests run when
`ZARNIWOOP_TEST_REDIS_URL` is set: a unique key prefix per test, deleted afterwards. Elsewhere
they skip and say why.

Under pytest-xdist (`-n N`) each worker `gwK` works on its own database and Redis db number, so
that no two workers ever see each other's rows or keys: `pytest_configure` below rewrites both
variables in the worker's environment before any test reads them —

    postgresql://…/test   ->  postgresql://…/test_gw0, …/test_gw1, …  (created on demand)
    redis://…:6379/10     ->  redis://…:6379/10 (gw0), …/11 (gw1), …  (base + worker index)

so the Redis base plus the worker count must stay below the server's `databases` (16 by default).
`ZARNIWOOP_HOME` and `tmp_path` are per worker already (each worker has its own basetemp).

    def test_x(database_url): ...          # runs twice: SQLite (None = default file) and PostgreSQL
    def test_y(redis_config): ...          # {"redis_url": ..., "redis_prefix": ...}
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

PG_ENV = "ZARNIWOOP_TEST_POSTGRES_URL"
REDIS_ENV = "ZARNIWOOP_TEST_REDIS_URL"


def worker_index() -> int | None:
    """The pytest-xdist worker's number (`gw3` -> 3), or None outside xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    match = re.fullmatch(r"gw(\d+)", worker)
    return int(match.group(1)) if match else None


def worker_postgres_url(base: str, index: int) -> str:
    """The base URL's database with the worker's suffix: `…/test?x=1` -> `…/test_gw0?x=1`."""
    parts = urlsplit(base)
    database = parts.path.lstrip("/") or "postgres"
    return urlunsplit(parts._replace(path=f"/{database}_gw{index}"))


def worker_redis_url(base: str, index: int) -> str:
    """The base URL's db number plus the worker's index: `redis://h:6379/10` -> `…/11` for gw1."""
    parts = urlsplit(base)
    number = int(parts.path.lstrip("/") or "0") + index
    if number > 15:
        raise pytest.UsageError(
            f"{REDIS_ENV}: db {number} for worker gw{index} is past Redis's default 16 databases;"
            " choose a lower base db number (it is the first worker's; the others count up from it)"
        )
    return urlunsplit(parts._replace(path=f"/{number}"))


async def _ensure_database(url: str) -> None:
    """Create the URL's database when it does not exist yet (from the server's `postgres` database)."""
    import asyncpg

    try:
        await (await asyncpg.connect(url, timeout=60)).close()
        return
    except asyncpg.InvalidCatalogNameError:
        pass
    parts = urlsplit(url)
    conn = await asyncpg.connect(urlunsplit(parts._replace(path="/postgres")), timeout=60)
    try:
        await conn.execute(f'CREATE DATABASE "{parts.path.lstrip("/")}"')
    except asyncpg.DuplicateDatabaseError:  # another worker or run created it meanwhile
        pass
    finally:
        await conn.close()


def pytest_configure(config: pytest.Config) -> None:
    """Per-worker backends under pytest-xdist (see the module's docstring); the database, created
    on demand, in a serial run too."""
    index = worker_index()
    if base := os.environ.get(PG_ENV):
        url = base if index is None else worker_postgres_url(base, index)
        # no asyncpg, no server, no right to create: each test says so itself
        with contextlib.suppress(Exception):
            asyncio.run(_ensure_database(url))
        os.environ[PG_ENV] = url
    if index is not None and (base := os.environ.get(REDIS_ENV)):
        os.environ[REDIS_ENV] = worker_redis_url(base, index)


def _with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


async def _pg(url: str, *statements: str) -> list[Any]:
    import asyncpg

    conn = await asyncpg.connect(url, timeout=60)
    try:
        out = []
        for sql in statements:
            out.append(await conn.fetch(sql))
        return out
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def postgres_schema_url() -> Iterator[str]:
    """A PostgreSQL URL with a fresh schema for this test session."""
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"PostgreSQL tests need {PG_ENV} (e.g. postgresql://postgres@127.0.0.1:5432/test)")
    schema = f"zw_test_{uuid.uuid4().hex[:10]}"
    asyncio.run(_pg(base, f'CREATE SCHEMA "{schema}"'))
    try:
        yield _with_schema(base, schema)
    finally:
        asyncio.run(_pg(base, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))


@pytest.fixture
def postgres_url(postgres_schema_url: str) -> Iterator[str]:
    """The session schema, emptied after the test (migrations stay applied)."""
    yield postgres_schema_url
    base = os.environ[PG_ENV]
    schema = postgres_schema_url.rsplit("schema=", 1)[1]
    [rows] = asyncio.run(
        _pg(
            base,
            f"SELECT tablename FROM pg_tables WHERE schemaname = '{schema}' AND tablename <> 'schema_version'",
        )
    )
    if rows:
        tables = ", ".join(f'"{schema}"."{r[0]}"' for r in rows)
        asyncio.run(_pg(base, f"TRUNCATE {tables} RESTART IDENTITY"))


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str | None:
    """Run a test on each database backend: None (the embedded SQLite default) and PostgreSQL."""
    if request.param == "sqlite":
        return None
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def redis_config() -> Iterator[dict[str, str]]:
    """Config-file keys for a Redis shared by the test's processes, under a key prefix of its own."""
    url = os.environ.get(REDIS_ENV)
    if not url:
        pytest.skip(f"Redis tests need {REDIS_ENV} (e.g. redis://127.0.0.1:6379/10)")
    prefix = f"zwtest:{uuid.uuid4().hex[:10]}:"
    yield {"redis_url": url, "redis_prefix": prefix}

    async def cleanup() -> None:
        import redis.asyncio as aioredis

        client = aioredis.from_url(url)
        try:
            keys = [k async for k in client.scan_iter(match=prefix + "*", count=500)]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()

    asyncio.run(cleanup())

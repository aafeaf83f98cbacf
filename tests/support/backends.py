"""Fixtures for the scale-out backends: PostgreSQL and Redis, isolated per test run.

PostgreSQL tests run when `ZARNIWOOP_TEST_POSTGRES_URL` is set (`.ci/run` sets it): one fresh
schema per test session (dropped at the end), emptied after each test. Redis tests run when
`ZARNIWOOP_TEST_REDIS_URL` is set: a unique key prefix per test, deleted afterwards. Elsewhere
they skip and say why.

    def test_x(database_url): ...          # runs twice: SQLite (None = default file) and PostgreSQL
    def test_y(redis_config): ...          # {"redis_url": ..., "redis_prefix": ...}
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

PG_ENV = "ZARNIWOOP_TEST_POSTGRES_URL"
REDIS_ENV = "ZARNIWOOP_TEST_REDIS_URL"


def _with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


async def _pg(url: str, *statements: str) -> list[Any]:
    import asyncpg

    conn = await asyncpg.connect(url, timeout=5)
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
        pytest.skip(f"Redis tests need {REDIS_ENV} (e.g. redis://127.0.0.1:6379/15)")
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

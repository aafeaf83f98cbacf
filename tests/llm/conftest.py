"""LLM-call test fixtures: one emulator per module (starting one per test costs half a second),
and the Redis URL of the scale-out tests (they skip, saying why, where none is configured)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator

import pytest

from ..support.emulator import Emulator


@pytest.fixture(scope="module")
def _module_emulator() -> Iterator[Emulator]:
    emu = Emulator().start()
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def emulator(_module_emulator: Emulator) -> Emulator:
    _module_emulator.reset()
    return _module_emulator


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get("ZARNIWOOP_TEST_REDIS_URL")
    if not url:
        pytest.skip("ZARNIWOOP_TEST_REDIS_URL is not set (the CI script sets it; Redis tests need a server)")
    return url


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL URL with a fresh schema of its own, dropped afterwards."""
    base = os.environ.get("ZARNIWOOP_TEST_POSTGRES_URL")
    if not base:
        pytest.skip(
            "ZARNIWOOP_TEST_POSTGRES_URL is not set (the CI script sets it; PostgreSQL tests need a server)"
        )
    try:
        import zarniwoop.storage.postgres  # noqa: F401
    except ImportError:
        pytest.skip(
            "zarniwoop.storage.postgres is not on this branch yet (it comes with the usage-scale work)"
        )
    schema = f"zw_llm_{uuid.uuid4().hex[:10]}"
    yield f"{base}{'&' if '?' in base else '?'}schema={schema}"

    async def drop() -> None:
        import asyncpg

        conn = await asyncpg.connect(base, timeout=60)
        try:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await conn.close()

    asyncio.run(drop())

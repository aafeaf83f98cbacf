"""LLM-call test fixtures: one emulator per module (starting one per test costs half a second),
and the Redis URL of the scale-out tests (they skip, saying why, where none is configured)."""

from __future__ import annotations

import os
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

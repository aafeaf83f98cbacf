"""The async tests' loop (tests/conftest.py `_TestLoop`): a third party's connection left over from
an earlier test's loop, closed during a later test, does not fail the later test; any other error
reaching the loop's handler still does."""

from __future__ import annotations

import asyncio
import gc

import httpx2
import pytest

from .conftest import _raised_in_httpcore2
from .support.emulator import Emulator, Reply

# the second test closes what the first opened: both on one worker, in this order
pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group(__name__)]

_left_over: list[httpx2.AsyncClient] = []


async def test_a_connection_opened_on_one_loop(emulator: Emulator) -> None:
    emulator.add("/x", Reply.json({"a": 1}))
    client = httpx2.AsyncClient()
    assert (await client.get(f"{emulator.url}/x")).status_code == 200
    _left_over.append(client)  # never closed here, as a client a library forgot


async def test_closed_on_the_next_tests_loop_does_not_fail_it() -> None:
    [client] = _left_over
    closing = asyncio.get_running_loop().create_task(client.aclose())
    await asyncio.wait({closing}, timeout=60)  # the wait retrieves no error of it
    assert closing.done()  # failed (the old loop is closed), its error never retrieved, as a
    del closing  # library's finaliser leaves it: collected, the task hands it to the loop's handler
    gc.collect()


def test_only_that_error_of_httpcore2_is_dropped() -> None:
    def fails() -> None:
        raise RuntimeError("Event loop is closed")

    with pytest.raises(RuntimeError) as caught:
        fails()
    assert not _raised_in_httpcore2(caught.value)  # ours (or another library's): still reported

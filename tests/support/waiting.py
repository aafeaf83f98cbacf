"""Waiting for an event that only shows by polling (a process exiting, a row appearing), issue 41.

The timeout is a guard against a hang, never a verdict on speed: it is generous (a loaded 2-core
machine was seen taking 20 s over what takes 1 s idle), and its expiry fails the test by name. A
fast machine returns at the first true reading, so the wait decides nothing there either.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

GENEROUS = 60.0
"""Seconds a wait whose expiry fails a test is given (scripts/check_test_clock.py wants >= 30)."""


def until(condition: Callable[[], T], what: str, timeout: float = GENEROUS, interval: float = 0.05) -> T:
    """Poll `condition` until it returns something true, and return that; fail naming `what` if
    it is still false after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {timeout:g} s for {what}")
        time.sleep(interval)
    return value


async def until_async(
    condition: Callable[[], T | Awaitable[T]], what: str, timeout: float = GENEROUS, interval: float = 0.02
) -> T:
    """`until` for an event loop: `condition` may be a coroutine function; the loop runs meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if isinstance(value, Awaitable):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {timeout:g} s for {what}")
        await asyncio.sleep(interval)

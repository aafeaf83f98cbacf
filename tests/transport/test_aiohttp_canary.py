"""The one private name of aiohttp the transport relies on: fails, naming it, when aiohttp moves it.

`ClientSession._retry_connection` (aiohttp ≥ 3.10) makes aiohttp resend an idempotent request once
when a kept connection fails under it; the transport switches it off so that one attempt is at most
one upstream request (`transport/pools.py::_one_request_per_attempt`). pyproject bounds aiohttp below
the next minor release; a newer aiohttp must pass this before the bound moves.
"""

from __future__ import annotations

import aiohttp
import pytest

from zarniwoop.transport.http import HttpTransport

pytestmark = pytest.mark.anyio


async def test_aiohttp_still_has_the_private_resend_switch():
    session = aiohttp.ClientSession()
    try:
        assert "_retry_connection" in aiohttp.ClientSession.ATTRS, (
            f"aiohttp {aiohttp.__version__}: ClientSession._retry_connection is gone; "
            "transport/pools.py::_one_request_per_attempt no longer switches off the resend"
        )
        assert session._retry_connection is True, f"aiohttp {aiohttp.__version__} changed its default"
    finally:
        await session.close()


async def test_the_transports_sessions_have_it_switched_off(emulator):
    from zarniwoop.contract import RequestSpec

    from ..support.emulator import Reply

    emulator.add("/s", Reply(body=b"ok"))
    transport = HttpTransport()
    try:
        await transport.send(RequestSpec("GET", f"{emulator.url}/s"), timeout=60)
        sessions = list(transport._sessions.values())
        assert sessions and all(session._retry_connection is False for session in sessions)
    finally:
        await transport.aclose()

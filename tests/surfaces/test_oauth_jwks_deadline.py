"""A hanging JWKS cannot pile requests up (issue 45): fetches are single-flight per issuer, nobody
waits past the fetch's deadline, and a failure is remembered for a while (a negative cache).

The app runs in this event loop behind uvicorn on a loopback port, on a `ManualClock` (time moves
only when the test says), so that the deadline is asserted by the clock's reading and counted
events — the loopback JWKS's requests, the requests waiting on the deadline — never by a stopwatch.
"""

from __future__ import annotations

import asyncio
import contextlib

import httpx
import pytest
import uvicorn

from zarniwoop.runtime import Runtime
from zarniwoop.surfaces.http.app import create_app
from zarniwoop.tenancy.oauth import JWKS_DEADLINE_SECONDS, JWKS_RETRY_SECONDS

from ..support.clock import ManualClock
from ..support.emulator import Reply
from ..support.oauth import JWKS_PATH, TestIssuer
from ..support.runtime import write_config
from ..support.waiting import until_async

pytestmark = pytest.mark.anyio
USER = {"zarniwoop_tenant": "acme", "zarniwoop_project": "review", "scope": "zarniwoop:user"}


@contextlib.asynccontextmanager
async def serving(app):
    """`app` behind uvicorn on 127.0.0.1 (a free port) in this event loop; yields its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve())
    try:
        await until_async(lambda: server.started or task.done(), "uvicorn to start")
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


async def test_eight_tokens_of_a_hanging_jwks_share_one_fetch_and_end_at_its_deadline(tmp_path, emulator):
    idp = TestIssuer(emulator)
    emulator.add(JWKS_PATH, Reply(hang=True))  # the issuer's keys never come
    config = write_config(tmp_path, {"auth": idp.config(), "tenants": {"acme": {"projects": {"review": {}}}}})
    clock = ManualClock()
    rt = await Runtime.open(config, home=tmp_path / "home", clock=clock)
    try:
        async with (
            serving(create_app(rt, auth="oauth")) as base,
            httpx.AsyncClient(base_url=base, timeout=60) as http,
        ):

            def call() -> asyncio.Task[httpx.Response]:
                headers = {"Authorization": f"Bearer {idp.token(**USER)}"}
                return asyncio.ensure_future(http.get("/v1/research/providers", headers=headers))

            waiting_before = clock.sleepers
            started = clock.monotonic()
            calls = [call() for _ in range(8)]
            await until_async(
                lambda: idp.fetches() == 1 and clock.sleepers == waiting_before + 8,
                "one JWKS fetch and eight requests waiting on its deadline",
            )
            assert not any(c.done() for c in calls)
            clock.advance(JWKS_DEADLINE_SECONDS)  # the deadline, once: every request is answered
            answers = await asyncio.gather(*calls)
            assert clock.monotonic() - started <= JWKS_DEADLINE_SECONDS + 1
            assert [a.status_code for a in answers] == [503] * 8
            assert {a.json()["error"]["message"] for a in answers} == {
                f"the issuer's keys (jwksUri) cannot be read right now: no answer within {JWKS_DEADLINE_SECONDS:g} s"
            }
            assert idp.fetches() == 1  # one fetch for eight requests

            # the negative cache: refused at once, no new fetch, nobody waits
            again = call()
            await until_async(again.done, "an answer that waits for no deadline (the clock stands still)")
            assert again.result().status_code == 503 and idp.fetches() == 1

            # past the negative cache a request fetches again (one fetch), and ends at the deadline
            clock.advance(JWKS_RETRY_SECONDS)
            later = call()
            await until_async(
                lambda: idp.fetches() == 2 and clock.sleepers == waiting_before + 1, "the second fetch"
            )
            clock.advance(JWKS_DEADLINE_SECONDS)
            assert (await later).status_code == 503
            assert idp.fetches() == 2
    finally:
        await rt.aclose()

"""The shared transport: size cap, redirects, timeouts, status mapping, Retry-After."""

from __future__ import annotations

import time

import httpx2
import pytest

from zarniwoop.contract import (
    AuthError,
    ProviderHTTPError,
    ProviderTimeoutError,
    RateLimitedError,
    RawResponse,
    RequestSpec,
    ResponseTooLargeError,
    TransportError,
)
from zarniwoop.transport.http import HttpTransport, parse_retry_after, raise_for_status

from ..support.emulator import Reply

pytestmark = pytest.mark.anyio


@pytest.fixture
async def transport():
    t = HttpTransport(max_bytes=1024)
    yield t
    await t.aclose()


async def test_body_over_the_cap_stops_reading(transport, emulator):
    emulator.add("/big", Reply(body=b"x" * 5000))
    with pytest.raises(ResponseTooLargeError, match="exceeds the 1024-byte cap"):
        await transport.send(RequestSpec("GET", f"{emulator.url}/big"), timeout=2)
    ok = await transport.send(RequestSpec("GET", f"{emulator.url}/big"), timeout=2, max_bytes=10_000)
    assert len(ok.body) == 5000


async def test_same_host_redirect_is_followed_other_host_refused(transport, emulator):
    emulator.add("/old", Reply(status=301, headers={"Location": "/new"}))
    emulator.add("/new", Reply(body=b"here"))
    emulator.add("/away", Reply(status=302, headers={"Location": "http://169.254.169.254/latest/meta-data"}))
    raw = await transport.send(RequestSpec("GET", f"{emulator.url}/old"), timeout=2)
    assert (raw.status, raw.body) == (200, b"here")
    with pytest.raises(TransportError, match="redirect to another host refused"):
        await transport.send(RequestSpec("GET", f"{emulator.url}/away"), timeout=2)


async def test_slow_body_times_out(transport, emulator):
    emulator.add("/slow", Reply(body=b"abcdefgh", chunk_delay=0.5, chunks=4))
    begin = time.monotonic()
    with pytest.raises(ProviderTimeoutError):
        await transport.send(RequestSpec("GET", f"{emulator.url}/slow"), timeout=0.3)
    assert time.monotonic() - begin < 1.5


async def test_connection_refused_is_a_transport_error(transport):
    with pytest.raises(TransportError, match="network error"):
        await transport.send(RequestSpec("GET", "http://127.0.0.1:9/x"), timeout=1)


async def test_mock_transport_injection():
    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.headers["X-API-KEY"] == "k"
        assert request.url.params["q"] == "hello"
        return httpx2.Response(200, content=b'{"ok": true}', headers={"X-RateLimit-Remaining": "9"})

    t = HttpTransport(httpx2.AsyncClient(transport=httpx2.MockTransport(handler)))
    raw = await t.send(
        RequestSpec("GET", "https://api.example/s", params=(("q", "hello"),), headers={"X-API-KEY": "k"}),
        timeout=1,
    )
    assert raw.body == b'{"ok": true}' and raw.header("x-ratelimit-remaining") == "9"


@pytest.mark.parametrize(
    ("status", "headers", "error", "attrs"),
    [
        (429, {"Retry-After": "7"}, RateLimitedError, {"retry_after": 7.0}),
        (429, {}, RateLimitedError, {"retry_after": None}),
        (401, {}, AuthError, {"status": 401}),
        (403, {}, AuthError, {"status": 403}),
        (503, {}, ProviderHTTPError, {"status": 503}),
    ],
)
def test_status_mapping(status, headers, error, attrs):
    with pytest.raises(error) as info:
        raise_for_status(RawResponse(status, headers, b""), "x")
    for name, value in attrs.items():
        assert getattr(info.value, name) == value


def test_retry_after_http_date():
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
    assert parse_retry_after("garbage") is None

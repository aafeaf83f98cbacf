"""The shared transport on aiohttp: caps, redirects, timeouts, status mapping, Retry-After, errors."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp
import pytest

import zarniwoop
from zarniwoop.contract import (
    AuthError,
    ProviderError,
    ProviderHTTPError,
    ProviderTimeoutError,
    RateLimitedError,
    RawResponse,
    RequestSpec,
    ResponseTooLargeError,
    TransportError,
)
from zarniwoop.transport.errors import translate_errors
from zarniwoop.transport.http import HttpTransport
from zarniwoop.transport.status import parse_retry_after, raise_for_status

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
        await transport.send(RequestSpec("GET", f"{emulator.url}/big"), timeout=60)
    ok = await transport.send(RequestSpec("GET", f"{emulator.url}/big"), timeout=60, max_bytes=10_000)
    assert len(ok.body) == 5000


async def test_same_host_redirect_is_followed_a_private_other_host_refused(transport, emulator):
    emulator.add("/old", Reply(status=301, headers={"Location": "/new"}))
    emulator.add("/new", Reply(body=b"here"))
    emulator.add("/away", Reply(status=302, headers={"Location": "http://169.254.169.254/latest/meta-data"}))
    raw = await transport.send(RequestSpec("GET", f"{emulator.url}/old"), timeout=60)
    assert (raw.status, raw.body, raw.url) == (200, b"here", f"{emulator.url}/new")
    # another origin is not the operator's: the hop passes the SSRF policy, which refuses link-local
    with pytest.raises(
        TransportError, match=r"endpoint refused: .*169\.254\.169\.254 is a link-local address"
    ):
        await transport.send(RequestSpec("GET", f"{emulator.url}/away"), timeout=60)


async def test_a_redirect_is_returned_as_it_came_with_max_redirects_0(transport, emulator):
    emulator.add("/old", Reply(status=307, headers={"Location": "/new"}, body=b"moved"))
    raw = await transport.send(RequestSpec("GET", f"{emulator.url}/old"), timeout=60, max_redirects=0)
    assert (raw.status, raw.header("location"), raw.body) == (307, "/new", b"moved")
    assert [r.path for r in emulator.requests()] == ["/old"]


async def test_slow_body_times_out(transport, emulator):
    # the head and a first chunk at once, the rest an hour apart: the body can only time out, and
    # the head has a whole second to arrive first, however busy the machine
    emulator.add("/slow", Reply(body=b"abcdefgh", chunk_delay=3600.0, chunks=4))
    with pytest.raises(ProviderTimeoutError, match=r"^body from 127\.0\.0\.1:\d+ not complete within 1\.0s$"):
        await transport.send(RequestSpec("GET", f"{emulator.url}/slow"), timeout=1, deadline=30.0)
    # without a longer deadline the read timeout is the whole exchange's too: whichever ends it, it
    # is a timeout naming the host and the 1 s
    with pytest.raises(ProviderTimeoutError, match=r"127\.0\.0\.1:\d+ .*within 1\.0s"):
        await transport.send(RequestSpec("GET", f"{emulator.url}/slow"), timeout=1)


async def test_connection_refused_is_a_transport_error(transport):
    with pytest.raises(TransportError, match="network error"):
        await transport.send(RequestSpec("GET", "http://127.0.0.1:9/x"), timeout=60)


async def test_params_headers_and_json_body_reach_the_server(transport, emulator):
    emulator.add("/s", Reply.json({"ok": True}, headers={"X-RateLimit-Remaining": "9", "Set-Cookie": "a=b"}))
    spec = RequestSpec(
        "POST",
        f"{emulator.url}/s",
        params=(("q", "hello world"), ("n", "3")),
        headers={"X-API-KEY": "k"},
        json_body={"query": "é", "n": 3},
    )
    raw = await transport.send(spec, timeout=60)
    assert raw.body == b'{"ok": true}' and raw.header("x-ratelimit-remaining") == "9"
    seen = emulator.requests("/s")[0]
    assert (seen.param("q"), seen.param("n"), seen.header("x-api-key")) == ("hello world", "3", "k")
    assert seen.body == '{"query":"é","n":3}'.encode() and seen.header("content-type") == "application/json"
    assert seen.header("user-agent").startswith("zarniwoop/")
    await transport.send(spec, timeout=60)
    assert emulator.requests("/s")[1].header("cookie") is None  # no cookie jar: tenants share the pool


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


def _aiohttp_exception_classes() -> list[type[Exception]]:
    """Every exception class aiohttp exports: a class added by a later version joins the test by itself."""
    return sorted(
        (
            obj
            for obj in vars(aiohttp).values()
            if isinstance(obj, type) and issubclass(obj, aiohttp.ClientError)
        ),
        key=lambda cls: cls.__name__,
    )


def _instance(cls: type[Exception]) -> Exception:
    url = aiohttp.client_reqrep.URL("https://api.example/s?api_key=k")
    if issubclass(cls, aiohttp.ClientResponseError):
        return cls(aiohttp.RequestInfo(url, "GET", {}, url), (), status=503, message="boom")
    if issubclass(cls, aiohttp.ServerFingerprintMismatch):
        return cls(b"a", b"b", "api.example", 443)
    key = aiohttp.client_reqrep.ConnectionKey("api.example", 443, True, True, None, None, None)
    attempts = (
        lambda: cls(key, OSError(111, "boom")),
        lambda: cls(str(url), "boom"),
        lambda: cls("boom"),
        lambda: cls(),
    )
    for attempt in attempts:
        try:
            return attempt()
        except (TypeError, AttributeError):
            continue
    raise AssertionError(f"cannot build {cls.__name__}")


def test_aiohttp_exports_the_exception_classes_this_test_knows_of():
    names = {cls.__name__ for cls in _aiohttp_exception_classes()}
    assert {
        "ClientConnectorError",
        "ServerTimeoutError",
        "ClientPayloadError",
        "ClientHttpProxyError",
    } <= names
    assert len(names) >= 25


@pytest.mark.parametrize("cls", _aiohttp_exception_classes(), ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("stage", ["connect", "read", "stream"])
def test_every_aiohttp_exception_is_translated_into_our_tree(cls, stage):
    original = _instance(cls)
    with pytest.raises(ProviderError) as caught, translate_errors(stage, 2.5, where="api.example"):
        raise original
    error = caught.value
    assert error.__cause__ is original
    assert error.message.startswith("api.example: ")
    assert "api_key" not in error.message and "boom" not in error.message  # no URL, no aiohttp text
    if issubclass(cls, aiohttp.ServerTimeoutError):
        assert type(error) is ProviderTimeoutError and "2.5s" in error.message
    else:
        assert type(error) in (TransportError, ProviderHTTPError) or isinstance(error, ProviderHTTPError)


def test_only_the_transport_catches_or_imports_aiohttp():
    src = Path(zarniwoop.__file__).parent
    importing = re.compile(r"^\s*(import|from)\s+aiohttp\b", re.MULTILINE)
    offenders = [
        str(path.relative_to(src))
        for path in src.rglob("*.py")
        if importing.search(path.read_text(encoding="utf-8")) and path.parent.name != "transport"
    ]
    assert offenders == []

"""The shared transport: size cap, redirects, timeouts, status mapping, Retry-After, httpx2 errors."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx2
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
from zarniwoop.contract.errors import ProviderOverloadedError
from zarniwoop.transport.http import HttpTransport, translate_errors
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


def _httpx2_exception_classes() -> list[type[Exception]]:
    """Every exception class httpx2 exports: a class added by a later version joins the test by itself."""
    return sorted(
        (
            obj
            for obj in vars(httpx2).values()
            if isinstance(obj, type) and issubclass(obj, Exception) and not issubclass(obj, Warning)
        ),
        key=lambda cls: cls.__name__,
    )


def _instance(cls: type[Exception]) -> Exception:
    if issubclass(cls, httpx2.HTTPStatusError):
        request = httpx2.Request("GET", "https://api.example/s?api_key=k")
        response = httpx2.Response(503, headers={"Retry-After": "5"}, request=request)
        return cls("boom", request=request, response=response)
    try:
        return cls("boom")
    except TypeError:  # the stream errors take no message
        return cls()


def test_httpx2_exports_the_exception_classes_this_test_knows_of():
    names = {cls.__name__ for cls in _httpx2_exception_classes()}
    assert {"HTTPError", "TimeoutException", "InvalidURL", "StreamError", "HTTPStatusError"} <= names
    assert len(names) >= 25


@pytest.mark.parametrize("cls", _httpx2_exception_classes(), ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("stage", ["connect", "read", "stream"])
def test_every_httpx2_exception_is_translated_into_our_tree(cls, stage):
    original = _instance(cls)
    with pytest.raises(ProviderError) as caught, translate_errors(stage, 2.5, where="api.example"):
        raise original
    error = caught.value
    assert error.__cause__ is original
    assert error.message.startswith("api.example: ")
    assert "api_key" not in error.message and "boom" not in error.message  # no URL, no httpx2 text
    if issubclass(cls, httpx2.TimeoutException):
        assert type(error) is ProviderTimeoutError and "2.5s" in error.message
    elif issubclass(cls, httpx2.HTTPStatusError):
        assert (type(error), error.status, error.retry_after) == (ProviderOverloadedError, 503, 5.0)
    else:
        assert type(error) is TransportError and cls.__name__ in error.message


def test_only_the_transport_boundary_catches_httpx2_exceptions():
    src = Path(zarniwoop.__file__).parent
    catching = re.compile(r"except\s*\(?[^:]*httpx2\.")
    offenders = [
        str(path.relative_to(src))
        for path in src.rglob("*.py")
        if catching.search(path.read_text(encoding="utf-8")) and path != src / "transport" / "http.py"
    ]
    assert offenders == []

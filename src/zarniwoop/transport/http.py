"""The one outbound HTTP client (aiohttp) behind the project's own interface, for every kind of traffic.

Search calls, LLM calls (streamed or not), the gateway's upstream calls, content fetches, model
discovery, probes and webhooks all go through an `HttpTransport`: one per process, one aiohttp
session (connection pool) per address policy. The rules live here once:
- pooling: 200 connections at most, idle ones kept 30 s; no cookies kept between calls (tenants share
  the pool); no `.netrc`, no proxy from aiohttp's own environment lookup (`transport/proxies.py` decides);
- caps: the response head (a line or field over 8,190 bytes, more than 128 fields: refused by the
  parser, never buffered) and the body *as decoded* (a gzip bomb stops at the cap);
- framing: a response whose `Transfer-Encoding` is not `chunked` alone is refused at its head, its
  connection closed (`transport/heads.py`);
- timeouts between reads (the silence of the other side), for connecting, and a total deadline
  (`total_deadline`: connect + head + body for `send`, connect + head for a stream, whose chunks
  each get the read timeout), so a host dripping a byte a second cannot hold a call past it;
- redirects followed here, by `transport/redirects.py` (never https → http; keys dropped and the hop
  SSRF-guarded on any change of origin);
- guarded calls (a URL a tenant or project set, or a hop away from the operator's origin): every
  connect goes to an address the SSRF policy of `transport/guard.py` allowed *after* resolution;
- **at most one upstream request per attempt**: aiohttp resends an idempotent request once when a
  kept connection fails; that resend is switched off (`_one_request_per_attempt`), since the first
  request may have reached the provider and been billed.

    transport = HttpTransport()                      # one per process
    raw = await transport.send(spec, timeout=8.0)    # RawResponse, never raises on status
    raise_for_status(raw, "serper-main")             # transport/status.py: 429 → RateLimitedError, …
    async with transport.stream(spec, timeout=120.0) as streamed:
        async for line in streamed.lines(): ...
    await transport.aclose()
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import functools
import ipaddress
import json
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from ..contract.errors import ResponseTooLargeError, TargetRefusedError, TransportError
from ..contract.protocol import RawResponse, RequestSpec
from .errors import Stage, total_deadline, translate_errors
from .guard import AddressPolicy, GuardedResolver, Resolver, TargetPolicy, split_target
from .heads import FramedResponse, check_headers
from .proxies import ProxySettings
from .redirects import REDIRECT_STATUSES, next_hop

DEFAULT_MAX_BYTES = 8 * 1024 * 1024
"""A search answer larger than this is not a search answer; reading stops there."""
STREAM_MAX_BYTES = 64 * 1024 * 1024
"""A stream (an LLM's answer token by token) larger than this is cut with an error."""
MAX_REDIRECTS = 3
MAX_CONNECTIONS = 200
KEEPALIVE_EXPIRY = 30.0
"""Seconds an idle connection is kept."""
MAX_LINE_BYTES = 8190
"""The longest status line or header field accepted (aiohttp's and nginx's default)."""
MAX_HEADERS = 128
"""The most header fields accepted in one response head: with `MAX_LINE_BYTES` a head is ≤ 1 MiB."""
USER_AGENT = "zarniwoop/0.1 (+https://pypi.org/project/zarniwoop/)"
ENDPOINT_HINT = (
    "an endpoint URL set below system level must be public "
    "(the operator may set research.allowPrivateEndpoints: true at system level)"
)


class HttpTransport:
    """Sends `RequestSpec`s over aiohttp; one instance per process.

    Args:
        max_bytes: the default cap of a response body (as decoded).
        proxies: which proxy each request goes through (`http.proxy` in the config, else the environment).
        resolver, address_allowed: the SSRF policy of guarded calls (tests declare a loopback port
            "public" with `address_allowed`); default: the system resolver, public addresses only.
        ssl_context: the TLS trust to verify servers with (tests pass one trusting their own CA);
            default: the system's.
        max_connections: connections open at once per pool; a request past it waits for one.
    """

    def __init__(
        self,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        proxies: ProxySettings | None = None,
        resolver: Resolver | None = None,
        address_allowed: AddressPolicy | None = None,
        ssl_context: ssl.SSLContext | None = None,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.max_bytes = max_bytes
        self.proxies = proxies or ProxySettings()
        self.resolver = resolver
        self.address_allowed = address_allowed
        self.ssl_context = ssl_context
        self.max_connections = max_connections
        self._sessions: dict[TargetPolicy | None, aiohttp.ClientSession] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def endpoint_policy(self) -> TargetPolicy:
        """The SSRF policy of guarded search and LLM calls (from `resolver` and `address_allowed` as
        they are now: tests set them on a runtime's transport)."""
        return TargetPolicy(ENDPOINT_HINT, self.resolver, self.address_allowed)

    async def send(
        self,
        spec: RequestSpec,
        *,
        timeout: float,
        max_bytes: int | None = None,
        guarded: bool = False,
        max_redirects: int = MAX_REDIRECTS,
        connect_timeout: float | None = None,
        deadline: float | None = None,
    ) -> RawResponse:
        """Send one request, follow up to `max_redirects` redirects, return whatever status came back.

        `guarded`: the URL is not the operator's (a tenant or project set the endpoint's `baseUrl`):
        every connect is checked by the SSRF policy after DNS resolution. `max_redirects=0` returns a
        redirect as it came (LLM calls never follow one). `timeout` bounds each read (the other
        side's silence); `deadline` (default: `timeout`) the whole exchange, every hop and the body.
        """
        async with total_deadline(timeout if deadline is None else deadline, url=spec.url):
            return await self._send(spec, timeout, max_bytes, guarded, max_redirects, connect_timeout)

    async def _send(
        self,
        spec: RequestSpec,
        timeout: float,
        max_bytes: int | None,
        guarded: bool,
        max_redirects: int,
        connect_timeout: float | None,
    ) -> RawResponse:
        cap = max_bytes or self.max_bytes
        started = time.perf_counter()
        url, params, method, body = spec.url, spec.params, spec.method, spec.json_body
        headers: Mapping[str, str] = spec.headers
        for hops in range(max_redirects + 1):
            policy = self.endpoint_policy if guarded else None
            # `open()` without its generator-based context manager: this is every search's hot path
            response = await self._request(
                method,
                url,
                params,
                headers,
                body,
                timeout=timeout,
                connect_timeout=connect_timeout,
                policy=policy,
            )
            try:
                status, answer = response.status, headers_of(response)
                served = str(response.url) if params else url
                location = answer.get("location")
                if max_redirects and status in REDIRECT_STATUSES and location:
                    if hops == max_redirects:
                        break
                    hop = next_hop(
                        served,
                        status,
                        location,
                        method=method,
                        body=body,
                        headers=headers,
                        secret=spec.secret_headers,
                    )
                    url, params, method, body, headers = hop.url, (), hop.method, hop.body, hop.headers
                    guarded = guarded or hop.cross_origin
                    continue
                content = await read_capped(response, cap, "read", timeout, url)
            except BaseException:
                response.close()  # a half-read body: the connection cannot carry another request
                raise
            finally:
                response.release()
            return RawResponse(
                status=status,
                headers=answer,
                body=content,
                url=served,
                elapsed_ms=(time.perf_counter() - started) * 1000,
            )
        raise TransportError(f"more than {max_redirects} redirects")

    @contextlib.asynccontextmanager
    async def stream(
        self,
        spec: RequestSpec,
        *,
        timeout: float,
        guarded: bool = False,
        connect_timeout: float | None = None,
        head_deadline: float | None = None,
    ) -> AsyncIterator[Streamed]:
        """One request whose answer is read as it arrives (no redirects followed): the head must come
        within `head_deadline` (default: `timeout`), then each chunk within `timeout` of the last."""
        async with self.open(
            spec.method,
            spec.url,
            spec.headers,
            spec.json_body,
            params=spec.params,
            timeout=timeout,
            connect_timeout=connect_timeout,
            policy=self.endpoint_policy if guarded else None,
            head_deadline=head_deadline,
        ) as response:
            yield Streamed(response, str(response.url), timeout)

    @contextlib.asynccontextmanager
    async def open(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: Any,
        *,
        params: tuple[tuple[str, str], ...] = (),
        timeout: float,
        connect_timeout: float | None = None,
        policy: TargetPolicy | None = None,
        decompress: bool = True,
        where: str = "",
        head_deadline: float | None = None,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """One exchange until its head arrived; the response is released (its connection kept only
        when the body was read to the end) when the block ends. `policy`: the SSRF policy every
        connect of this exchange must pass (None: the operator's URL, not checked). Connecting and
        the head together get `head_deadline` (default: `timeout`); the body is the caller's to bound."""
        head = timeout if head_deadline is None else head_deadline
        async with total_deadline(head, url=url, where=where, head=True):
            response = await self._request(
                method,
                url,
                params,
                headers,
                body,
                timeout=timeout,
                connect_timeout=connect_timeout,
                policy=policy,
                decompress=decompress,
                where=where,
            )
        try:
            yield response
        except BaseException:
            response.close()
            raise
        finally:
            response.release()

    async def _request(
        self,
        method: str,
        url: str,
        params: tuple[tuple[str, str], ...],
        headers: Mapping[str, str],
        body: Any,
        *,
        timeout: float,
        connect_timeout: float | None,
        policy: TargetPolicy | None,
        decompress: bool = True,
        where: str = "",
    ) -> aiohttp.ClientResponse:
        """Send one request and wait for its head; the caller releases the response."""
        check_headers(headers)
        proxy = self.proxies.for_url(url)
        if policy is not None:
            await self._precheck(url, policy, resolve=proxy is not None)
        data = None
        if body is not None:
            data = json_bytes(body)
            if not any(name.lower() == "content-type" for name in headers):
                headers = {**headers, "Content-Type": "application/json"}
        session = self._session(None if proxy is not None else policy)
        try:
            with translate_errors("connect", timeout, where=where, url=url):
                return await session.request(
                    method,
                    url,
                    params=params or None,
                    data=data,
                    headers=headers,
                    proxy=proxy,
                    timeout=_timeouts(timeout, connect_timeout or timeout),
                    allow_redirects=False,
                    auto_decompress=decompress,
                )
        except TargetRefusedError as exc:
            raise self._refused(exc, policy) from None

    async def _precheck(self, url: str, policy: TargetPolicy, *, resolve: bool) -> None:
        """What the guarded resolver cannot see: an IP-literal host (aiohttp connects to it without
        asking the resolver) and, through a proxy, the target (the connector resolves only the
        proxy): its name, and every address this machine resolves it to (`TargetPolicy.addresses`)."""
        host, port = split_target(url, url)
        try:
            ipaddress.ip_address(host)
        except ValueError:
            if not resolve:
                return
        try:
            await policy.addresses(host, port, url, via_proxy=resolve)
        except TargetRefusedError as exc:
            raise self._refused(exc, policy) from None

    def _refused(self, exc: TargetRefusedError, policy: TargetPolicy | None) -> Exception:
        """A refused search or LLM endpoint is a transport error, so the dispatcher benches it; the
        content fetcher's refusals stay `TargetRefusedError`."""
        if policy == self.endpoint_policy:
            return TransportError(f"endpoint refused: {exc.reason}")
        return exc

    def _session(self, policy: TargetPolicy | None) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop (a CLI command, a test): the old pools are dead
            self._sessions, self._loop = {}, loop
        session = self._sessions.get(policy)
        if session is None or session.closed:
            session = self._sessions[policy] = self._new_session(policy)
        return session

    def _new_session(self, policy: TargetPolicy | None) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=self.max_connections,
            limit_per_host=0,
            keepalive_timeout=KEEPALIVE_EXPIRY,
            ssl=self.ssl_context if self.ssl_context is not None else True,
            resolver=GuardedResolver(policy) if policy is not None else None,
            use_dns_cache=policy is None,  # a guarded connect asks the policy every time
        )
        session = aiohttp.ClientSession(
            connector=connector,
            headers={"User-Agent": USER_AGENT},
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,
            timeout=aiohttp.ClientTimeout(total=None),
            max_line_size=MAX_LINE_BYTES,
            max_field_size=MAX_LINE_BYTES,
            max_headers=MAX_HEADERS,
            response_class=FramedResponse,
        )
        _one_request_per_attempt(session)
        return session

    async def aclose(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        current = asyncio.get_running_loop()
        if self._loop is current:
            for session in sessions:
                await session.close()


class Streamed:
    """An answer being read: status and headers have arrived, the body comes through `chunks`,
    `lines` or `text`; every failure is a Zarniwoop error (`translate_errors`, stage `stream`)."""

    __slots__ = ("_read", "_response", "headers", "status", "timeout", "url")

    def __init__(self, response: aiohttp.ClientResponse, url: str, timeout: float) -> None:
        self._response = response
        self.status = response.status
        self.headers = headers_of(response)
        self.url = url
        self.timeout = timeout
        self._read = 0

    async def read(self, cap: int = DEFAULT_MAX_BYTES) -> bytes:
        """The whole (rest of the) body, refused past `cap`."""
        return await read_capped(self._response, cap, "stream", self.timeout, self.url)

    async def chunks(self, cap: int = STREAM_MAX_BYTES) -> AsyncIterator[bytes]:
        """The body as it arrives, decoded; cut with `ResponseTooLargeError` past `cap` in all."""
        iterator = self._response.content.iter_any().__aiter__()
        while True:
            with translate_errors("stream", self.timeout, url=self.url):
                try:
                    chunk = await iterator.__anext__()
                except StopAsyncIteration:
                    return
            self._read += len(chunk)
            if self._read > cap:
                raise ResponseTooLargeError(f"stream exceeds {cap} bytes")
            yield chunk

    async def text(self) -> AsyncIterator[str]:
        """The body as UTF-8 text, chunk by chunk (a character split between chunks is kept whole)."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        async for chunk in self.chunks():
            text = decoder.decode(chunk)
            if text:
                yield text
        rest = decoder.decode(b"", final=True)
        if rest:
            yield rest

    async def lines(self, max_line: int = DEFAULT_MAX_BYTES) -> AsyncIterator[str]:
        """The body line by line (`\\n`, `\\r\\n`), without the line ends; a line longer than
        `max_line` bytes is refused."""
        pending = b""
        async for chunk in self.chunks():
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for line in complete:
                yield line.rstrip(b"\r").decode("utf-8", "replace")
            if len(pending) > max_line:
                raise ResponseTooLargeError(f"a stream line exceeds {max_line} bytes")
        if pending:
            yield pending.rstrip(b"\r").decode("utf-8", "replace")


@functools.lru_cache(maxsize=64)
def _timeouts(read: float, connect: float) -> aiohttp.ClientTimeout:
    """aiohttp's timeouts: between reads (the other side's silence) and for connecting; no total, since
    the caller's deadline bounds the whole call. Few distinct pairs exist (one per endpoint setting)."""
    return aiohttp.ClientTimeout(total=None, connect=connect, sock_read=read)


def headers_of(response: aiohttp.ClientResponse) -> dict[str, str]:
    """The answer's headers with lower-case names; a repeated field joined with `, ` (RFC 9110 §5.3).
    Linear in the head's size, which the parser already capped."""
    merged: dict[str, str] = {}
    for name, value in response.headers.items():
        key = name.lower()
        merged[key] = f"{merged[key]}, {value}" if key in merged else value
    return merged


async def read_capped(
    response: aiohttp.ClientResponse, cap: int, stage: Stage, timeout: float, url: str
) -> bytes:
    """The body as decoded, refused with `ResponseTooLargeError` as soon as it passes `cap` bytes (a
    declared `Content-Length` over the cap is refused before reading)."""
    declared = response.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > cap:
        raise ResponseTooLargeError(f"response of {declared} bytes exceeds the {cap}-byte cap")
    chunks: list[bytes] = []
    size = 0
    with translate_errors(stage, timeout, url=url):
        async for chunk in response.content.iter_any():
            size += len(chunk)
            if size > cap:
                raise ResponseTooLargeError(f"response exceeds the {cap}-byte cap")
            chunks.append(chunk)
    return b"".join(chunks)


def json_bytes(body: Any) -> bytes:
    """A JSON request body: compact, UTF-8, no NaN (orjson writes one as `null`), by orjson (issue 42);
    what it refuses (an integer past 64 bits, a key not a string) goes to stdlib `json` as before."""
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _one_request_per_attempt(session: aiohttp.ClientSession) -> None:
    """Switch off aiohttp's resend of an idempotent request whose kept connection failed: the first
    request may have been received (and billed) before the connection dropped. A private attribute
    of aiohttp's `ClientSession`: pyproject bounds aiohttp below the next minor release and
    `tests/transport/test_aiohttp_canary.py` fails, naming it, when it moves."""
    session._retry_connection = False


RATE_LIMIT_HEADER_PREFIXES = ("x-ratelimit", "ratelimit", "x-rate-limit", "retry-after")


def rate_limit_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The upstream headers worth passing on: rate-limit state only (never cookies or auth echoes)."""
    return {k.lower(): v for k, v in headers.items() if k.lower().startswith(RATE_LIMIT_HEADER_PREFIXES)}


def host_of(url: str) -> str:
    try:
        return urlsplit(url).hostname or url
    except ValueError:
        return url


__all__ = [
    "DEFAULT_MAX_BYTES",
    "ENDPOINT_HINT",
    "MAX_HEADERS",
    "MAX_LINE_BYTES",
    "USER_AGENT",
    "HttpTransport",
    "Streamed",
    "check_headers",
    "headers_of",
    "json_bytes",
    "rate_limit_headers",
    "read_capped",
    "translate_errors",
]

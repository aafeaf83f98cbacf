"""The one outbound HTTP client (aiohttp) behind the project's own interface, for every kind of traffic.

Search calls, LLM calls (streamed or not), the gateway's upstream calls, content fetches, model
discovery, probes and webhooks all go through an `HttpTransport`: one per process, one aiohttp
session (connection pool) per address policy. The rules live here once:
- the pools (`transport/pools.py`): their limits, the response head capped by the parser and its
  framing checked (`transport/heads.py`), and **at most one upstream request per attempt**;
- the body capped *as decoded*, a gzip bomb stopping at the cap (`transport/reading.py`);
- timeouts between reads (the silence of the other side), for connecting, and a total deadline
  (`total_deadline`: connect + head + body for `send`, connect + head for a stream, whose chunks
  each get the read timeout), so a host dripping a byte a second cannot hold a call past it;
- redirects followed here, in one loop (`follow`: `send` and the content fetcher), each hop as
  `transport/redirects.py` says (never https → http; keys dropped and the hop SSRF-guarded on any
  change of origin);
- guarded calls (a URL a tenant or project set, or a hop away from the operator's origin): every
  connect goes to an address the SSRF policy of `transport/guard.py` allowed *after* resolution.

    transport = HttpTransport()                      # one per process
    raw = await transport.send(spec, timeout=8.0)    # RawResponse, never raises on status
    raise_for_status(raw, "serper-main")             # transport/status.py: 429 → RateLimitedError, …
    async with transport.stream(spec, timeout=120.0) as streamed:
        async for line in streamed.lines(): ...
    await transport.aclose()
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp
import orjson

from ..contract.errors import TargetRefusedError, TransportError
from ..contract.protocol import RawResponse, RequestSpec
from .errors import total_deadline, translate_errors
from .guard import AddressPolicy, Resolver, TargetPolicy, split_target
from .heads import check_headers
from .pools import MAX_CONNECTIONS, MAX_HEADERS, MAX_LINE_BYTES, USER_AGENT, new_session, request_timeouts
from .proxies import ProxySettings
from .reading import DEFAULT_MAX_BYTES, Answer, Streamed, headers_of, rate_limit_headers, read_capped
from .redirects import MAX_REDIRECTS, REDIRECT_STATUSES, Redirects, next_hop

ENDPOINT_HINT = (
    "an endpoint URL set below system level must be public "
    "(the operator may set research.allowPrivateEndpoints: true at system level)"
)
_Body = TypeVar("_Body")


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
        caller_bounded: bool = False,
    ) -> RawResponse:
        """Send one request, follow up to `max_redirects` redirects, return whatever status came back.

        `guarded`: the URL is not the operator's (a tenant or project set the endpoint's `baseUrl`):
        every connect is checked by the SSRF policy after DNS resolution. `max_redirects=0` returns a
        redirect as it came (LLM calls never follow one). `timeout` bounds each read (the other
        side's silence); `deadline` (default: `timeout`) the whole exchange, every hop and the body.
        `caller_bounded`: the caller's own deadline, begun before and no longer, ends it (no timer).
        """
        whole = timeout if deadline is None else deadline
        cap = max_bytes or self.max_bytes
        started = time.perf_counter()
        endpoint = self.endpoint_policy

        def read(response: aiohttp.ClientResponse, url: str) -> Awaitable[bytes]:
            return read_capped(response, cap, "read", timeout, url)

        async with total_deadline(None if caller_bounded else whole, url=spec.url):
            answer = await self.follow(
                spec.method,
                spec.url,
                spec.headers,
                spec.json_body,
                read,
                params=spec.params,
                timeout=timeout,
                connect_timeout=connect_timeout,
                policy=endpoint if guarded else None,
                redirects=Redirects(max_redirects, spec.secret_headers, off_origin=endpoint),
                # a read or connect timeout no shorter than this deadline, which started first, can
                # never end the exchange first: aiohttp sets no timer for it then (issue 42)
                timed=whole > min(timeout, connect_timeout or timeout),
            )
        return RawResponse(
            status=answer.status,
            headers=answer.headers,
            body=answer.body,
            url=answer.url,
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )

    async def follow(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: Any,
        read: Callable[[aiohttp.ClientResponse, str], Awaitable[_Body]],
        *,
        params: tuple[tuple[str, str], ...] = (),
        timeout: float,
        connect_timeout: float | None = None,
        policy: TargetPolicy | None,
        redirects: Redirects,
        decompress: bool = True,
        name_host: bool = False,
        timed: bool = True,
    ) -> Answer[_Body]:
        """One request and the redirects it leads to, each hop as `transport/redirects.py` says; the
        last answer's body is `read(response, url)`'s. The one redirect loop of every kind of traffic
        (`send`, the content fetcher). `policy`: the SSRF policy every connect must pass (None: the
        operator's URL). `name_host`: errors start with the host they came from. The caller bounds
        the whole exchange (`total_deadline`); `timed=False`: before `timeout` or `connect_timeout` could."""
        hops: list[str] = []
        came_from: str | None = None
        for count in range(redirects.limit + 1):
            if redirects.check is not None:
                await redirects.check(url, came_from)
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
                where=host_of(url) if name_host else "",
                timed=timed,
            )
            try:
                status, answer = response.status, headers_of(response)
                served = str(response.url) if params else url
                location = answer.get("location")
                if redirects.limit and status in REDIRECT_STATUSES and location:
                    if count == redirects.limit:
                        break
                    hop = next_hop(
                        served,
                        status,
                        location,
                        method=method,
                        body=body,
                        headers=headers,
                        secret=redirects.secret,
                    )
                    url, method, body, headers = hop.url, hop.method, hop.body, hop.headers
                    came_from, params = served, ()
                    if hop.cross_origin and policy is None:
                        policy = redirects.off_origin
                    hops.append(url)
                    continue
                content = await read(response, url)
            except BaseException:
                response.close()  # a half-read body: the connection cannot carry another request
                raise
            finally:
                response.release()
            return Answer(status, answer, served, content, tuple(hops))
        raise TransportError(f"more than {redirects.limit} redirects")

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
        """One request whose answer is read as it arrives (no redirects followed): connecting and the
        head together get `head_deadline` (default: `timeout`), then each chunk `timeout` after the
        last. `guarded`: every connect passes the SSRF policy (the URL is not the operator's). The
        response is released (its connection kept only when the body was read to the end) when the
        block ends."""
        url = spec.url
        async with total_deadline(timeout if head_deadline is None else head_deadline, url=url, head=True):
            response = await self._request(
                spec.method,
                url,
                spec.params,
                spec.headers,
                spec.json_body,
                timeout=timeout,
                connect_timeout=connect_timeout,
                policy=self.endpoint_policy if guarded else None,
            )
        try:
            yield Streamed(response, str(response.url), timeout)
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
        timed: bool = True,
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
                    timeout=request_timeouts(timeout, connect_timeout or timeout, timed),
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
            session = self._sessions[policy] = new_session(
                policy, max_connections=self.max_connections, ssl_context=self.ssl_context
            )
        return session

    async def aclose(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        current = asyncio.get_running_loop()
        if self._loop is current:
            for session in sessions:
                await session.close()


def json_bytes(body: Any) -> bytes:
    """A JSON request body: compact, UTF-8, no NaN (orjson writes one as `null`), by orjson (issue 42);
    what it refuses (an integer past 64 bits, a key not a string) goes to stdlib `json` as before."""
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


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

"""One shared async HTTP client (httpx2): pooling, per-call timeouts, a body size cap, no cross-host redirects.

Direct search GETs and POSTs go over the lean HTTP/1.1 pool of `transport/h1.py` (a seventh of
httpx2's client's CPU per call); proxied and SSRF-guarded calls, an injected client and all LLM and
content traffic over httpx2. `translate_errors` is the one place where httpx2's exceptions — which
the lean pool raises too — become Zarniwoop's, for every kind of traffic (`ProviderTimeoutError`,
`TransportError`, a status error from `transport/status.py`).

    transport = HttpTransport()                      # one per process
    raw = await transport.send(spec, timeout=8.0)    # RawResponse, never raises on status
    raise_for_status(raw, "serper-main")             # transport/status.py: 429 → RateLimitedError, …
    await transport.aclose()
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

import httpx2

from ..contract.errors import ProviderTimeoutError, ResponseTooLargeError, TargetRefusedError, TransportError
from ..contract.protocol import RawResponse, RequestSpec
from .backend import install as install_backend
from .guard import AddressPolicy, Resolver, check_target
from .h1 import H1Pool, Origin, request_head
from .network import explain, target_of
from .proxies import ProxySettings
from .status import error_for_status, search_message

DEFAULT_MAX_BYTES = 8 * 1024 * 1024
"""A search answer larger than this is not a search answer; reading stops there."""
MAX_REDIRECTS = 3
USER_AGENT = "zarniwoop/0.1 (+https://pypi.org/project/zarniwoop/)"
REDIRECTS = frozenset((301, 302, 303, 307, 308))
_DEFAULT_HEADERS = (
    ("Accept", "*/*"),
    ("Accept-Encoding", "gzip, deflate"),
    ("Connection", "keep-alive"),
    ("User-Agent", USER_AGENT),
)
"""What httpx2's client sends unless a request says otherwise (its Accept-Encoding without brotli or
zstandard installed: the codings `transport/h1.py` undoes)."""

_Answer = tuple[int, dict[str, str], "bytes | None", str]
"""Status, headers, body (None for a redirect, left unread) and the URL that answered."""


@dataclass(frozen=True, slots=True)
class _Route:
    """A URL taken apart once for the lean path: where to connect, the Host header, the request target."""

    origin: Origin
    host_header: str
    target: str
    """Path and query as they go on the request line, percent-encoded as httpx2 encodes them."""
    has_query: bool

    @classmethod
    def of(cls, url: str, proxies: ProxySettings) -> _Route | None:
        if proxies.for_url(url) is not None:
            return None
        try:
            parsed = httpx2.URL(url)
        except httpx2.InvalidURL:
            return None  # httpx2 words the error
        if parsed.scheme not in ("http", "https") or parsed.userinfo or parsed.fragment or not parsed.host:
            return None
        target = parsed.raw_path.decode("ascii")
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        origin = Origin(parsed.scheme, parsed.raw_host.decode("ascii"), port)
        return cls(origin, parsed.netloc.decode("ascii"), target, "?" in target)


class HttpTransport:
    """Sends `RequestSpec`s over one pooled `httpx2.AsyncClient`.

    Args:
        client: inject a client (tests pass one over `httpx2.MockTransport`); by default one is built
            with keep-alive pooling and redirects handled here, so they never leave the original host.
        max_bytes: default size cap for a response body.
    """

    def __init__(
        self,
        client: httpx2.AsyncClient | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        proxies: ProxySettings | None = None,
        resolver: Resolver | None = None,
        address_allowed: AddressPolicy | None = None,
    ) -> None:
        self._owns_client = client is None
        self.proxies = proxies or ProxySettings()
        """Which proxy each request goes through (`http.proxy` in the config, else the environment)."""
        limits = httpx2.Limits(max_connections=200, max_keepalive_connections=50, keepalive_expiry=30.0)
        direct = None
        if client is None:  # the transport AsyncClient would build, with the cheap idle check
            direct = httpx2.AsyncHTTPTransport(limits=limits, trust_env=False)
            install_backend(direct)
        self.client = client or httpx2.AsyncClient(
            follow_redirects=False,
            limits=limits,
            timeout=httpx2.Timeout(10.0),
            headers={"User-Agent": USER_AGENT},
            # The environment is read once, into `proxies`, not by httpx2 per request: `trust_env`
            # would also bring .netrc credentials into provider calls.
            trust_env=False,
            mounts=self.proxies.mounts(limits),
            transport=direct,
        )
        self.max_bytes = max_bytes
        self.resolver = resolver
        self.address_allowed = address_allowed
        """The SSRF policy of guarded calls (tests declare a loopback port "public" with it)."""
        self._unpooled: httpx2.AsyncClient | None = None
        self._pool = H1Pool() if self._owns_client else None
        """The lean path for direct GET and POST (`transport/h1.py`); an injected client gets every call."""
        self._routes: dict[str, _Route | None] = {}

    async def send(
        self, spec: RequestSpec, *, timeout: float, max_bytes: int | None = None, guarded: bool = False
    ) -> RawResponse:
        """Send one request; follow same-host redirects; return whatever status came back.

        `guarded`: the URL is not the operator's (a tenant or project set the endpoint's `baseUrl`):
        each hop is checked by the SSRF policy of `transport/guard.py` after DNS resolution and sent
        to the checked address, over a connection that is never reused for another host.
        """
        cap = max_bytes or self.max_bytes
        started = time.perf_counter()
        url, method, params, body = spec.url, spec.method, spec.params, spec.json_body
        origin = urlsplit(url).netloc
        for _ in range(MAX_REDIRECTS + 1):
            route = None if guarded else self._route(method, url, params)
            if route is not None:
                status, headers, content, served = await self._send_direct(
                    route, method, url, params, spec.headers, body, timeout=timeout, cap=cap
                )
            else:
                status, headers, content, served = await self._send_httpx2(
                    url, method, params, spec.headers, body, timeout=timeout, cap=cap, guarded=guarded
                )
            if content is None:  # a redirect: the body was not read
                location = urljoin(url, headers["location"])
                if urlsplit(location).netloc != origin:
                    raise TransportError(f"redirect to another host refused ({urlsplit(location).netloc})")
                url, params = location, ()
                if status == 303:
                    method, body = "GET", None
                continue
            return RawResponse(
                status=status,
                headers=headers,
                body=content,
                url=served,
                elapsed_ms=(time.perf_counter() - started) * 1000,
            )
        raise TransportError(f"more than {MAX_REDIRECTS} redirects")

    async def _send_httpx2(
        self,
        url: str,
        method: str,
        params: tuple[tuple[str, str], ...],
        spec_headers: Mapping[str, str],
        body: Any,
        *,
        timeout: float,
        cap: int,
        guarded: bool,
    ) -> _Answer:
        headers = dict(spec_headers)
        target, client = url, self.client
        extensions: dict[str, Any] = {}
        if guarded:
            target, extensions = await self.pin(url, headers)
            client = self.guarded_client()
        query = params or None
        if query and "?" not in target and "#" not in target:
            # the query encoded as httpx2 merges `params` (`str(QueryParams(...))`), put in the URL:
            # httpx2 then parses the URL once instead of twice (issue 18's profile)
            target, query = f"{target}?{httpx2.QueryParams(query)}", None
        with translate_errors("connect", timeout, url=url):
            request = client.build_request(
                method,
                target,
                params=query,
                headers=headers,
                json=body,
                timeout=httpx2.Timeout(timeout),
                extensions=extensions,
            )
            response = await client.send(request, stream=True)
        try:
            if response.status_code in REDIRECTS and "location" in response.headers:
                return response.status_code, dict(response.headers), None, url
            with translate_errors("read", timeout, url=url):
                content = await _read_capped(response, cap)
        finally:
            await response.aclose()
        return (
            response.status_code,
            dict(response.headers),
            content,
            url if guarded else str(response.request.url),
        )

    def _route(self, method: str, url: str, params: tuple[tuple[str, str], ...]) -> _Route | None:
        """How `url` goes over the pool of `transport/h1.py`, or None when httpx2 must send it: an
        injected client, a proxy, a method other than GET or POST, credentials or a fragment in the
        URL, a query in the URL as well as `params`, a scheme other than http(s)."""
        if self._pool is None or method not in ("GET", "POST"):
            return None
        if url in self._routes:
            route = self._routes[url]
        else:
            if len(self._routes) >= 4096:  # redirect targets can be many; endpoints are few
                self._routes.clear()
            route = self._routes[url] = _Route.of(url, self.proxies)
        if route is None or (params and route.has_query):
            return None
        return route

    async def _send_direct(
        self,
        route: _Route,
        method: str,
        url: str,
        params: tuple[tuple[str, str], ...],
        spec_headers: Mapping[str, str],
        body: Any,
        *,
        timeout: float,
        cap: int,
    ) -> _Answer:
        assert self._pool is not None
        target, served = route.target, url
        if params:
            query = str(httpx2.QueryParams(params))
            target, served = f"{target}?{query}", f"{url}?{query}"
        payload = None if body is None else _json_bytes(body)
        with translate_errors("connect", timeout, url=url):
            head = request_head(
                method, target, route.host_header, spec_headers, payload, defaults=_DEFAULT_HEADERS
            )
            exchange = await self._pool.send(
                route.origin, head, payload, timeout=timeout, cap=cap, retry=method == "GET"
            )
        headers = exchange.headers
        if exchange.status in REDIRECTS and "location" in headers:
            exchange.release()
            return exchange.status, headers, None, served
        with translate_errors("read", timeout, url=url):
            content = await exchange.read()
        return exchange.status, headers, content, served

    async def pin(self, url: str, headers: dict[str, str]) -> tuple[str, dict[str, Any]]:
        """The SSRF check of one guarded hop: the URL with its host swapped for the checked address
        (Host header and TLS SNI keep the name, `headers` is updated in place) and the request
        extensions to send it with; a refused target is a `TransportError`, so the dispatcher benches
        the endpoint. Search (`send(guarded=True)`) and LLM calls (`llm/adapters/_http.py`) use it."""
        try:
            address, _host, _port = await check_target(
                url,
                None,
                allow_private=False,
                resolver=self.resolver,
                address_allowed=self.address_allowed,
                hint="an endpoint URL set below system level must be public "
                "(the operator may set research.allowPrivateEndpoints: true at system level)",
            )
        except TargetRefusedError as exc:
            raise TransportError(f"endpoint refused: {exc.reason}") from None
        original = httpx2.URL(url)
        headers["Host"] = original.netloc.decode("ascii")
        extensions = {"sni_hostname": original.raw_host.decode("ascii")} if original.scheme == "https" else {}
        return str(original.copy_with(host=str(address))), extensions

    def guarded_client(self) -> httpx2.AsyncClient:
        """A client without keep-alive for guarded calls: a pooled connection is keyed by address and
        must not carry a request for another host name."""
        if self._unpooled is None:
            self._unpooled = httpx2.AsyncClient(
                follow_redirects=False,
                trust_env=False,
                limits=httpx2.Limits(max_connections=50, max_keepalive_connections=0),
                headers={"User-Agent": USER_AGENT},
            )
        return self._unpooled

    async def aclose(self) -> None:
        if self._unpooled is not None:
            await self._unpooled.aclose()
        if self._pool is not None:
            await self._pool.aclose()
        if self._owns_client:
            await self.client.aclose()


_STAGES = {
    "connect": ("no answer{} within {:.1f}s", ""),
    "read": ("body{} not complete within {:.1f}s", " while reading"),
    "stream": ("stream{} stalled for {:.1f}s", " while streaming"),
}


_OUTSIDE_HTTP_ERROR = (httpx2.InvalidURL, httpx2.CookieConflict, httpx2.StreamError)
"""httpx2's exceptions outside its `HTTPError` tree: a URL it cannot parse, a cookie clash, a stream
read twice or after closing. The request never completed, so for the caller it is a transport error."""


@contextlib.contextmanager
def translate_errors(
    stage: Literal["connect", "read", "stream"],
    timeout: float,
    *,
    where: str = "",
    url: str | None = None,
) -> Iterator[None]:
    """The one boundary where httpx2's exceptions become Zarniwoop's (search, LLM and content traffic).

    A timeout → `ProviderTimeoutError`; an `HTTPStatusError` → its status's error; every other httpx2
    exception → `TransportError`. With the request's `url` the message names host, port and cause
    in plain words (`network error: cannot resolve en.wikipedia.org`, `… connection to
    10.0.0.5:443 refused`, `no answer from … within 8.0s`); it never carries an exception's text,
    which may hold a URL with a key in it. `where` prefixes the message (the content fetcher).
    """
    timeout_text, context = _STAGES[stage]
    prefix = f"{where}: " if where else ""
    host, port = target_of(url) if url else ("", 0)
    origin = f" from {host}:{port}" if host else ""
    try:
        yield
    except httpx2.TimeoutException as exc:
        raise ProviderTimeoutError(prefix + timeout_text.format(origin, timeout)) from exc
    except httpx2.HTTPStatusError as exc:
        status, headers = exc.response.status_code, exc.response.headers
        raise error_for_status(status, headers, prefix + search_message(status)) from exc
    except httpx2.HTTPError as exc:
        cause = explain(exc, host, port) if host else None
        detail = cause or (f"{type(exc).__name__} with {host}:{port}" if host else type(exc).__name__)
        raise TransportError(f"{prefix}network error{context}: {detail}") from exc
    except _OUTSIDE_HTTP_ERROR as exc:
        raise TransportError(f"{prefix}request not sent{context}: {type(exc).__name__}") from exc


async def _read_capped(response: httpx2.Response, cap: int) -> bytes:
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > cap:
        raise ResponseTooLargeError(f"response of {declared} bytes exceeds the {cap}-byte cap")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > cap:
            raise ResponseTooLargeError(f"response exceeds the {cap}-byte cap")
        chunks.append(chunk)
    return b"".join(chunks)


def _json_bytes(body: Any) -> bytes:
    """A JSON body byte for byte as httpx2 encodes `json=` (compact, UTF-8, no NaN)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


RATE_LIMIT_HEADER_PREFIXES = ("x-ratelimit", "ratelimit", "x-rate-limit", "retry-after")


def rate_limit_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The upstream headers worth passing on: rate-limit state only (never cookies or auth echoes)."""
    return {k.lower(): v for k, v in headers.items() if k.lower().startswith(RATE_LIMIT_HEADER_PREFIXES)}

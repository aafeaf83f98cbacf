"""One shared async HTTP client (httpx2): pooling, per-call timeouts, a body size cap, no cross-host redirects.

This is the only module that imports httpx2 for search traffic, and `translate_errors` is the one
place where httpx2's exceptions become Zarniwoop's — for search, LLM and content traffic alike
(`ProviderTimeoutError`, `TransportError`, a status error from `transport/status.py`).

    transport = HttpTransport()                      # one per process
    raw = await transport.send(spec, timeout=8.0)    # RawResponse, never raises on status
    raise_for_status(raw, "serper-main")             # transport/status.py: 429 → RateLimitedError, …
    await transport.aclose()
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urljoin, urlsplit

import httpx2

from ..contract.errors import ProviderTimeoutError, ResponseTooLargeError, TargetRefusedError, TransportError
from ..contract.protocol import RawResponse, RequestSpec
from .backend import install as install_backend
from .guard import AddressPolicy, Resolver, check_target
from .network import explain, target_of
from .proxies import ProxySettings
from .status import error_for_status, search_message

if TYPE_CHECKING:
    from collections.abc import Mapping

DEFAULT_MAX_BYTES = 8 * 1024 * 1024
"""A search answer larger than this is not a search answer; reading stops there."""
MAX_REDIRECTS = 3
USER_AGENT = "zarniwoop/0.1 (+https://pypi.org/project/zarniwoop/)"


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
            headers = dict(spec.headers)
            target, client = url, self.client
            extensions: dict[str, Any] = {}
            if guarded:
                target, extensions = await self._pinned(url, headers)
                client = self._unpooled_client()
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
                if response.status_code in (301, 302, 303, 307, 308) and "location" in response.headers:
                    location = urljoin(url, response.headers["location"])
                    if urlsplit(location).netloc != origin:
                        raise TransportError(
                            f"redirect to another host refused ({urlsplit(location).netloc})"
                        )
                    url, params = location, ()
                    if response.status_code == 303:
                        method, body = "GET", None
                    continue
                with translate_errors("read", timeout, url=url):
                    content = await _read_capped(response, cap)
            finally:
                await response.aclose()
            return RawResponse(
                status=response.status_code,
                headers=dict(response.headers),
                body=content,
                url=url if guarded else str(response.request.url),
                elapsed_ms=(time.perf_counter() - started) * 1000,
            )
        raise TransportError(f"more than {MAX_REDIRECTS} redirects")

    async def _pinned(self, url: str, headers: dict[str, str]) -> tuple[str, dict[str, Any]]:
        """The URL with its host swapped for the checked address (Host header and TLS SNI keep the
        name); a refused target is a `TransportError`, so the dispatcher benches the endpoint."""
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

    def _unpooled_client(self) -> httpx2.AsyncClient:
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


RATE_LIMIT_HEADER_PREFIXES = ("x-ratelimit", "ratelimit", "x-rate-limit", "retry-after")


def rate_limit_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The upstream headers worth passing on: rate-limit state only (never cookies or auth echoes)."""
    return {k.lower(): v for k, v in headers.items() if k.lower().startswith(RATE_LIMIT_HEADER_PREFIXES)}

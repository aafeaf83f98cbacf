"""Fetching arbitrary URLs for the content store, with an SSRF guard.

Search calls go to configured endpoints (`transport/http.py`); content URLs come from search
hits, i.e. from the internet, and must not reach the machine's own network. So every hop is
checked *after* DNS resolution — the host's addresses must all be public (not private, loopback,
link-local, multicast, reserved or unspecified; IPv4 inside IPv6 is unwrapped) — and the
connection goes to the very address that was checked (the URL's host is swapped for the IP; the
`Host` header and TLS SNI/certificate check keep the name), so a DNS answer that changes between
check and connect (rebinding) cannot slip through. Redirects are followed by hand, each target
resolved and checked again. Reading stops at the size cap: the body is cut there, not refused.

    fetcher = GuardedFetcher()
    page = await fetcher.fetch("https://example.org/paper.pdf", max_bytes=20 << 20, allow_private=False)
    page.body, page.truncated, page.final_url
    await fetcher.aclose()

Tests inject `resolver` (name → addresses) and `address_allowed` (address, port → bool) to declare
one loopback port "public" without opening any non-loopback connection.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import httpx2

from ..contract.errors import TransportError
from .guard import (
    AddressPolicy,
    IPAddress,
    Resolver,
    address_problem,
    check_target,
    is_public_address,
    resolve_host,
)
from .http import USER_AGENT, translate_errors
from .proxies import ProxySettings
from .status import error_for_status

__all__ = [
    "MAX_REDIRECTS",
    "Fetched",
    "GuardedFetcher",
    "address_problem",
    "is_public_address",
    "resolve_host",
]

MAX_REDIRECTS = 5


@dataclass(frozen=True, slots=True)
class Fetched:
    """One fetched body: possibly cut at the cap (`truncated`), after `redirects` hops."""

    url: str
    final_url: str
    status: int
    headers: dict[str, str]
    body: bytes
    truncated: bool
    redirects: tuple[str, ...] = field(default_factory=tuple)

    @property
    def mime_type(self) -> str | None:
        value = self.headers.get("content-type")
        return value.split(";", 1)[0].strip().lower() or None if value else None


class GuardedFetcher:
    """GETs URLs from the internet for the content store; refuses non-public targets on every hop.

    Args:
        client: inject an `httpx2.AsyncClient`; by default one is built that never follows redirects
            itself, ignores proxy environment variables and keeps no idle connections (a pooled
            connection is keyed by address, and must not carry a request for another host name).
        resolver: `(host, port) -> [addresses]`; default: the system resolver.
        address_allowed: `(address, port) -> bool`; default: `is_public_address`.
        proxies: where an outbound proxy applies, the checked request goes to the proxy (with the
            original URL) instead of the checked address: the check has run first either way.
    """

    def __init__(
        self,
        client: httpx2.AsyncClient | None = None,
        *,
        resolver: Resolver | None = None,
        address_allowed: AddressPolicy | None = None,
        max_redirects: int = MAX_REDIRECTS,
        proxies: ProxySettings | None = None,
    ) -> None:
        self._owns_client = client is None
        limits = httpx2.Limits(max_connections=20, max_keepalive_connections=0)
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
        self.client = client or httpx2.AsyncClient(
            follow_redirects=False,
            trust_env=False,
            limits=limits,
            timeout=httpx2.Timeout(30.0),
            headers=headers,
        )
        self.proxies = proxies or ProxySettings()
        self._proxied = (
            httpx2.AsyncClient(
                follow_redirects=False,
                trust_env=False,
                limits=limits,
                timeout=httpx2.Timeout(30.0),
                headers=headers,
                mounts=self.proxies.mounts(limits),
            )
            if self.proxies.source != "none"
            else None
        )
        self.resolver = resolver or resolve_host
        self.address_allowed = address_allowed or is_public_address
        self.max_redirects = max_redirects

    async def fetch(self, url: str, *, max_bytes: int, allow_private: bool, timeout: float = 30.0) -> Fetched:
        """GET `url`, following up to `max_redirects` redirects, each hop checked; body cut at `max_bytes`.

        Raises:
            TargetRefusedError: the URL or a redirect target is not an http(s) URL or not public.
            ProviderHTTPError: the final answer is not 2xx (`error_for_status` picks the subclass).
            TransportError / ProviderTimeoutError: the network failed or was too slow.
        """
        deadline = time.monotonic() + timeout
        current, previous = url, None
        hops: list[str] = []
        for _ in range(self.max_redirects + 1):
            address, host, port = await self._checked_target(current, previous, allow_private)
            remaining = max(0.001, deadline - time.monotonic())
            response = await self._open(current, address, host, port, remaining)
            try:
                location = response.headers.get("location")
                if response.status_code in (301, 302, 303, 307, 308) and location:
                    previous, current = current, urljoin(current, location.strip())
                    hops.append(current)
                    continue
                with translate_errors("read", timeout, where=_host_of(current), url=current):
                    body, truncated = await _read_capped(response, max_bytes)
            finally:
                await response.aclose()
            if not 200 <= response.status_code < 300:
                status = response.status_code
                raise error_for_status(status, response.headers, f"HTTP {status} from {_host_of(current)}")
            return Fetched(
                url=url,
                final_url=current,
                status=response.status_code,
                headers={k.lower(): v for k, v in response.headers.items()},
                body=body,
                truncated=truncated,
                redirects=tuple(hops),
            )
        raise TransportError(f"{url}: more than {self.max_redirects} redirects")

    async def _checked_target(
        self, url: str, came_from: str | None, allow_private: bool
    ) -> tuple[IPAddress, str, int]:
        """Resolve the URL's host and check every address; returns the address to connect to."""
        return await check_target(
            url,
            came_from,
            allow_private=allow_private,
            resolver=self.resolver,
            address_allowed=self.address_allowed,
            hint="content is only fetched from public addresses "
            "(set research.content.allowPrivate: true to allow private targets)",
        )

    async def _open(
        self, url: str, address: IPAddress, host: str, port: int, timeout: float
    ) -> httpx2.Response:
        """Send the GET to the checked address, keeping the name for `Host` and TLS — or, where a
        proxy applies, to the proxy with the original URL (the target was checked all the same)."""
        if self._proxied is not None and self.proxies.for_url(url):
            with translate_errors("connect", timeout, where=host, url=url):
                request = self._proxied.build_request("GET", url, timeout=httpx2.Timeout(timeout))
                return await self._proxied.send(request, stream=True)
        original = httpx2.URL(url)
        target = original.copy_with(host=str(address))
        headers = {"Host": original.netloc.decode("ascii")}
        sni = original.raw_host.decode("ascii")  # IDNA form of the name, as TLS wants it
        extensions = {"sni_hostname": sni} if original.scheme == "https" else {}
        with translate_errors("connect", timeout, where=host, url=url):
            request = self.client.build_request(
                "GET", target, headers=headers, extensions=extensions, timeout=httpx2.Timeout(timeout)
            )
            return await self.client.send(request, stream=True)

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.aclose()
        if self._proxied is not None:
            await self._proxied.aclose()


async def _read_capped(response: httpx2.Response, cap: int) -> tuple[bytes, bool]:
    """Read at most `cap` bytes, then stop: the rest is never downloaded. Raw bytes, no decoding, so a
    compressed body cannot inflate past the cap (identity encoding is asked for anyway)."""
    chunks: list[bytes] = []
    size = 0
    iterator = response.aiter_raw()
    async for chunk in iterator:
        room = cap - size
        if len(chunk) > room:
            chunks.append(chunk[:room])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
        if size == cap:  # exactly full: is there more?
            declared = response.headers.get("content-length")
            if declared and declared.isdigit():
                return b"".join(chunks), int(declared) > cap
            async for extra in iterator:
                if extra:
                    return b"".join(chunks), True
            return b"".join(chunks), False
    return b"".join(chunks), False


def _host_of(url: str) -> str:
    try:
        return urlsplit(url).hostname or url
    except ValueError:
        return url

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

import asyncio
import ipaddress
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import httpx2

from ..contract.errors import TargetRefusedError, TransportError
from .http import USER_AGENT, translate_errors
from .proxies import ProxySettings
from .status import error_for_status

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
AddressPolicy = Callable[[IPAddress, int], bool]

MAX_REDIRECTS = 5
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


async def resolve_host(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to (A and AAAA), in the resolver's order."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: dict[IPAddress, None] = {}
    for _family, _type, _proto, _canon, sockaddr in infos:
        seen.setdefault(ipaddress.ip_address(str(sockaddr[0]).split("%")[0]), None)
    return list(seen)


def address_problem(ip: IPAddress) -> str | None:
    """Why `ip` is not a public internet address (`"loopback"`, `"link-local"`, …), or None if it is."""
    embedded = _embedded_ipv4(ip)
    if embedded is not None:
        return address_problem(embedded)
    for attribute, name in (
        ("is_loopback", "loopback"),
        ("is_link_local", "link-local"),
        ("is_unspecified", "unspecified"),
        ("is_multicast", "multicast"),
        ("is_private", "private"),
        ("is_reserved", "reserved"),
    ):
        if getattr(ip, attribute):
            return name
    if not ip.is_global:
        return "non-global"  # e.g. 100.64.0.0/10, carrier-grade NAT
    return None


def is_public_address(ip: IPAddress, port: int) -> bool:
    """The default address policy: public addresses only, any port."""
    return address_problem(ip) is None


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address hidden in an IPv4-mapped, NAT64, 6to4 or Teredo IPv6 address."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


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
        where = f"redirect from {came_from} to {url}" if came_from else url
        try:
            split = urlsplit(url)
            port = split.port
        except ValueError as exc:
            raise TargetRefusedError(where, f"not a valid URL ({exc})") from None
        if split.scheme not in ("http", "https"):
            raise TargetRefusedError(
                where, f"only http and https URLs can be fetched, not {split.scheme or 'no scheme'!r}"
            )
        host = split.hostname
        if not host:
            raise TargetRefusedError(where, "the URL has no host")
        port = port or (443 if split.scheme == "https" else 80)
        try:
            addresses: list[IPAddress] = [ipaddress.ip_address(host)]
        except ValueError:
            try:
                addresses = await self.resolver(host, port)
            except (OSError, UnicodeError) as exc:
                raise TransportError(f"{host}: cannot be resolved ({type(exc).__name__})") from None
        if not addresses:
            raise TransportError(f"{host}: resolves to no address")
        if not allow_private:
            for address in addresses:
                if not self.address_allowed(address, port):
                    kind = address_problem(address) or "disallowed"
                    shown = host if str(address) == host else f"{host} resolves to {address}, which"
                    raise TargetRefusedError(
                        where,
                        f"{shown} is a {kind} address; content is only fetched from public addresses "
                        "(set research.content.allowPrivate: true to allow private targets)",
                    )
        return addresses[0], host, port

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

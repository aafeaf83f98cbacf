"""Fetching arbitrary URLs for the content store, with an SSRF guard.

Search calls go to configured endpoints (`transport/http.py`); content URLs come from search
hits, i.e. from the internet, and must not reach the machine's own network. So every hop is
checked *after* DNS resolution — the host's addresses must all be public (not private, loopback,
link-local, multicast, reserved or unspecified; IPv4 inside IPv6 is unwrapped) — and the
connection is made by a pool whose resolver answers only with addresses the same policy allows
(`transport/guard.py`), so a DNS answer that changes between check and connect (rebinding) cannot
slip through. Redirects are followed by hand, each target checked again. Reading stops at the size
cap: the body is cut there, not refused.

Through a proxy (`HTTPS_PROXY`, `http.proxy`) the proxy resolves the name, as a proxy that does the
DNS for a machine without any must: the host name may not be an internal one (`localhost`, a
single-label name, `.internal`, `.local`, …), and every address this machine can resolve the name
to is checked as above; a name it cannot resolve at all goes to the proxy unresolved.

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

import aiohttp

from ..contract.errors import TransportError
from .errors import total_deadline, translate_errors
from .guard import (
    AddressPolicy,
    Resolver,
    TargetPolicy,
    address_problem,
    check_target,
    is_public_address,
    resolve_host,
)
from .http import HttpTransport, host_of
from .proxies import ProxySettings
from .redirects import REDIRECT_STATUSES, redirect_target
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
CONTENT_HINT = (
    "content is only fetched from public addresses "
    "(set research.content.allowPrivate: true to allow private targets)"
)


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
        transport: the process's `HttpTransport` (its pools, TLS trust and proxies); by default one
            of its own, closed with the fetcher.
        resolver: `(host, port) -> [addresses]`; default: the system resolver.
        address_allowed: `(address, port) -> bool`; default: `is_public_address`.
        proxies: where an outbound proxy applies, the checked request goes to the proxy (with the
            original URL): the check has run first either way.
    """

    def __init__(
        self,
        transport: HttpTransport | None = None,
        *,
        resolver: Resolver | None = None,
        address_allowed: AddressPolicy | None = None,
        max_redirects: int = MAX_REDIRECTS,
        proxies: ProxySettings | None = None,
    ) -> None:
        self._owns_transport = transport is None
        self.transport = transport or HttpTransport(proxies=proxies)
        self.resolver = resolver or resolve_host
        self.address_allowed = address_allowed or is_public_address
        self.max_redirects = max_redirects

    @property
    def policy(self) -> TargetPolicy:
        """The SSRF policy of content fetches, from `resolver` and `address_allowed` as they are now."""
        return TargetPolicy(CONTENT_HINT, self.resolver, self.address_allowed)

    async def fetch(self, url: str, *, max_bytes: int, allow_private: bool, timeout: float = 30.0) -> Fetched:
        """GET `url`, following up to `max_redirects` redirects, each hop checked; body cut at `max_bytes`.

        Raises:
            TargetRefusedError: the URL or a redirect target is not an http(s) URL or not public.
            ProviderHTTPError: the final answer is not 2xx (`error_for_status` picks the subclass).
            TransportError / ProviderTimeoutError: the network failed or was too slow.
        """
        async with total_deadline(timeout, url=url, where=host_of(url)):  # every hop and the body
            return await self._fetch(url, max_bytes, allow_private, timeout)

    async def _fetch(self, url: str, max_bytes: int, allow_private: bool, timeout: float) -> Fetched:
        deadline = time.monotonic() + timeout
        current, previous = url, None
        hops: list[str] = []
        policy = None if allow_private else self.policy
        for _ in range(self.max_redirects + 1):
            await check_target(
                current,
                previous,
                allow_private=allow_private,
                resolver=self.resolver,
                address_allowed=self.address_allowed,
                hint=CONTENT_HINT,
                via_proxy=self.transport.proxies.for_url(current) is not None,
            )
            remaining = max(0.001, deadline - time.monotonic())
            host = host_of(current)
            # Raw bytes, no decoding: identity is asked for, and a compressed body cannot inflate past the cap.
            async with self.transport.open(
                "GET",
                current,
                {"Accept-Encoding": "identity"},
                None,
                timeout=remaining,
                policy=policy,
                decompress=False,
                where=host,
            ) as response:
                location = response.headers.get("location")
                if response.status in REDIRECT_STATUSES and location:
                    previous, current = current, redirect_target(current, location)
                    hops.append(current)
                    continue
                with translate_errors("read", timeout, where=host, url=current):
                    body, truncated = await _read_cut(response, max_bytes)
                status, headers = response.status, {k.lower(): v for k, v in response.headers.items()}
            if not 200 <= status < 300:
                raise error_for_status(status, headers, f"HTTP {status} from {host}")
            return Fetched(
                url=url,
                final_url=current,
                status=status,
                headers=headers,
                body=body,
                truncated=truncated,
                redirects=tuple(hops),
            )
        raise TransportError(f"{url}: more than {self.max_redirects} redirects")

    async def aclose(self) -> None:
        if self._owns_transport:
            await self.transport.aclose()


async def _read_cut(response: aiohttp.ClientResponse, cap: int) -> tuple[bytes, bool]:
    """Read at most `cap` bytes, then stop: the rest is never downloaded."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
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
            return b"".join(chunks), bool(await response.content.read(1))
    return b"".join(chunks), False

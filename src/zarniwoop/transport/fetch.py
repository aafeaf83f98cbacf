"""Fetching arbitrary URLs for the content store, with an SSRF guard.

Search calls go to configured endpoints (`transport/http.py`); content URLs come from search
hits, i.e. from the internet, and must not reach the machine's own network. So every hop is
checked *after* DNS resolution — the host's addresses must all be public (not private, loopback,
link-local, multicast, reserved or unspecified; IPv4 inside IPv6 is unwrapped) — and the
connection is made by a pool whose resolver answers only with addresses the same policy allows
(`transport/guard.py`), so a DNS answer that changes between check and connect (rebinding) cannot
slip through. Redirects are followed by the transport's one loop (`HttpTransport.follow`), under
its rules (never https → http), each target checked again before its request. Reading stops at the size cap: the body is cut there, not
refused (`transport/reading.py` `read_cut`).

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

from collections.abc import Awaitable
from dataclasses import dataclass, field

import aiohttp

from .errors import total_deadline
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
from .reading import read_cut
from .redirects import Redirects
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
        policy = None if allow_private else self.policy

        async def check(target: str, came_from: str | None) -> None:
            await check_target(
                target,
                came_from,
                allow_private=allow_private,
                resolver=self.resolver,
                address_allowed=self.address_allowed,
                hint=CONTENT_HINT,
                via_proxy=self.transport.proxies.for_url(target) is not None,
            )

        def read(response: aiohttp.ClientResponse, at: str) -> Awaitable[tuple[bytes, bool]]:
            return read_cut(response, max_bytes, timeout, at, where=host_of(at))

        # Raw bytes, no decoding: identity is asked for, and a compressed body cannot inflate past the cap.
        answer = await self.transport.follow(
            "GET",
            url,
            {"Accept-Encoding": "identity"},
            None,
            read,
            timeout=timeout,
            policy=policy,
            redirects=Redirects(self.max_redirects, off_origin=policy, check=check),
            decompress=False,
            name_host=True,
            timed=False,  # `fetch`'s deadline, the same `timeout`, started first and ends first
        )
        if not 200 <= answer.status < 300:
            raise error_for_status(
                answer.status, answer.headers, f"HTTP {answer.status} from {host_of(answer.url)}"
            )
        body, truncated = answer.body
        return Fetched(url, answer.url, answer.status, answer.headers, body, truncated, answer.hops)

    async def aclose(self) -> None:
        if self._owns_transport:
            await self.transport.aclose()

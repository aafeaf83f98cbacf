"""The SSRF policy shared by the content fetcher and by endpoints a tenant or project pointed at a
URL: a target is checked *after* DNS resolution — every address the host resolves to must be public
(not private, loopback, link-local, multicast, reserved or unspecified; IPv4 inside IPv6 is
unwrapped) — and on every redirect; the caller connects to the very address that was checked, so
a DNS answer that changes between check and connect (rebinding) cannot slip through.

    address, host, port = await check_target(url, None, allow_private=False)   # one hop, by hand
    TCPConnector(resolver=GuardedResolver(policy))   # aiohttp asks it at every connect: checked addresses only

Tests inject `resolver` (name → addresses) and `address_allowed` (address, port → bool).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp.abc import AbstractResolver, ResolveResult

from ..contract.errors import TargetRefusedError, TransportError
from .network import unresolved_error

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
AddressPolicy = Callable[[IPAddress, int], bool]

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


def literal_address(host: str) -> IPAddress | None:
    """The address `host` spells as a literal, or None for a name: an IPv6 literal, or an IPv4
    address in any spelling the C resolver (`inet_aton`) accepts — one to four parts, each decimal,
    octal (`0177`) or hex (`0x7f`), the last filling the remaining bytes (`127.1`, `2130706433`,
    `0x7f.1`). A host that is one of these never reaches DNS: it is the address.

        literal_address("0x7f.1")   # IPv4Address('127.0.0.1')
        literal_address("example.org")   # None
    """
    host = host.strip("[]").rstrip(".")
    try:
        return ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        pass
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        lowered = part.lower()
        try:
            if lowered.startswith("0x"):
                values.append(int(lowered[2:], 16))
            elif len(part) > 1 and part.startswith("0"):
                values.append(int(part, 8))
            elif part.isdigit() and part.isascii():
                values.append(int(part))
            else:
                return None
        except ValueError:
            return None
    *head, last = values
    if any(v > 0xFF for v in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    number = last
    for index, value in enumerate(head):
        number |= value << (8 * (3 - index))
    return ipaddress.IPv4Address(number)


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
class TargetPolicy:
    """Which addresses one kind of guarded traffic may reach, and what a refusal tells the user."""

    hint: str = "only public addresses are allowed"
    """Appended to a refusal: what the user can do about it (which setting allows private targets)."""
    resolver: Resolver | None = None
    address_allowed: AddressPolicy | None = None

    async def addresses(
        self, host: str, port: int, where: str, *, via_proxy: bool = False
    ) -> list[IPAddress]:
        """Every address of `host`, each allowed by the policy; `where` names the target in a refusal.

        `via_proxy`: a proxy will resolve the name and connect, so this machine may not resolve it at
        all (a proxy that does the DNS): the host *name* must not be an internal one
        (`internal_name`), and every address this machine can see is checked; a name it cannot
        resolve is left to the proxy (the result is then empty).

        Raises:
            TargetRefusedError: an address the policy refuses (one refused address refuses the host),
                or, through a proxy, an internal host name.
            TransportError: the host does not resolve (not through a proxy).
        """
        literal = literal_address(host)
        if literal is not None:
            addresses: list[IPAddress] = [literal]
        else:
            if via_proxy:
                inner = internal_name(host)
                if inner is not None:
                    raise TargetRefusedError(
                        where, f"{host} is {inner}, which the proxy would reach inside; {self.hint}"
                    )
            try:
                addresses = await (self.resolver or resolve_host)(host, port)
            except (OSError, UnicodeError):
                if via_proxy:
                    return []  # the proxy resolves it; what it reaches is the proxy's policy
                raise unresolved_error(host) from None
        if not addresses:
            if via_proxy:
                return []
            raise TransportError(f"{host}: resolves to no address")
        allowed = self.address_allowed or is_public_address
        for address in addresses:
            if not allowed(address, port):
                kind = address_problem(address) or "disallowed"
                shown = host if str(address) == host else f"{host} resolves to {address}, which"
                raise TargetRefusedError(where, f"{shown} is a {kind} address; {self.hint}")
        return addresses


INTERNAL_SUFFIXES = (
    "localhost",
    "local",
    "localdomain",
    "internal",
    "intranet",
    "lan",
    "home",
    "corp",
    "home.arpa",
)
"""Name suffixes that name hosts inside a network (RFC 6761 `localhost`, mDNS `local`, RFC 8375
`home.arpa`, and the common private ones): never sent to a proxy to resolve."""


def internal_name(host: str) -> str | None:
    """Why a host *name* names a machine inside the network (`a single-label name`, `a .internal
    name`), or None — what can be checked of a target a proxy resolves."""
    name = host.lower().rstrip(".")
    if "." not in name:
        return "localhost" if name == "localhost" else "a single-label name"
    for suffix in INTERNAL_SUFFIXES:
        if name == suffix or name.endswith("." + suffix):
            return f"a .{suffix} name"
    return None


def split_target(url: str, where: str) -> tuple[str, int]:
    """`(host, port)` of an http(s) URL, or the refusal of anything else."""
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
    return host, port or (443 if split.scheme == "https" else 80)


async def check_target(
    url: str,
    came_from: str | None,
    *,
    allow_private: bool,
    resolver: Resolver | None = None,
    address_allowed: AddressPolicy | None = None,
    hint: str = "only public addresses are allowed",
    via_proxy: bool = False,
) -> tuple[IPAddress | None, str, int]:
    """Resolve the URL's host and check every address; returns `(address to connect to, host, port)`.

    `via_proxy`: a proxy resolves the name (`TargetPolicy.addresses`); the address is None when
    this machine cannot resolve it.

    Raises:
        TargetRefusedError: not an http(s) URL, no host, or an address the policy refuses.
        TransportError: the host does not resolve.
    """
    where = f"redirect from {came_from} to {url}" if came_from else url
    host, port = split_target(url, where)
    if allow_private and via_proxy:
        return None, host, port  # nothing to refuse, and the proxy does the DNS
    policy = TargetPolicy(hint, resolver, (lambda _a, _p: True) if allow_private else address_allowed)
    addresses = await policy.addresses(host, port, where, via_proxy=via_proxy)
    return (addresses[0] if addresses else None), host, port


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver for guarded connections: it answers only with addresses `policy` allows, so
    the connection goes to an address that was checked at connect time (no window for rebinding).
    A refusal is raised as `TargetRefusedError` and passes through aiohttp unchanged."""

    def __init__(self, policy: TargetPolicy) -> None:
        self.policy = policy

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[ResolveResult]:
        addresses = await self.policy.addresses(host, port, host)
        return [
            {
                "hostname": host,
                "host": str(address),
                "port": port,
                "family": socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address in addresses
        ]

    async def close(self) -> None:
        return None


__all__ = [
    "AddressPolicy",
    "GuardedResolver",
    "IPAddress",
    "Resolver",
    "TargetPolicy",
    "address_problem",
    "check_target",
    "internal_name",
    "is_public_address",
    "literal_address",
    "resolve_host",
    "split_target",
]

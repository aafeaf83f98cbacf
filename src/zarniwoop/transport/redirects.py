"""The redirect policy: where the next hop goes, with which method, body and headers — or why not.

The transport follows redirects itself (aiohttp's own following is off), so that these rules hold
for every kind of traffic:
- only to http(s), and never from https down to http (the next hop would send its headers in clear);
- on any change of origin (scheme, host or port) the credentials stay behind: the authorization
  and cookie headers, the API-key headers of every built-in protocol and wire, and whatever headers the
  request marks secret (`RequestSpec.secret_headers`); a body is never resent to another origin,
  since it may carry a key (Tavily's `api_key`);
- 303, and 301/302 after a POST, continue as a GET without a body (what browsers and httpx do).

    hop = next_hop(url, 302, location, method="GET", body=None, headers=headers)
    hop.url, hop.headers, hop.cross_origin
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from ..contract.errors import TransportError

if TYPE_CHECKING:
    from .guard import TargetPolicy

REDIRECT_STATUSES = frozenset((301, 302, 303, 307, 308))

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "x-api-key",  # Serper, Exa, Semantic Scholar, Anthropic
        "x-goog-api-key",  # Gemini
        "x-subscription-token",  # Brave
        "api-key",  # Azure OpenAI
    }
)
"""Headers that carry a credential in the wires Zarniwoop speaks (lower case)."""
MAX_REDIRECTS = 3
HopCheck = Callable[[str, "str | None"], Awaitable[None]]
"""Awaited before each request of a call: (its URL, the URL that redirected to it or None)."""


@dataclass(frozen=True, slots=True)
class Redirects:
    """How one call follows redirects (`HttpTransport.follow`)."""

    limit: int = MAX_REDIRECTS
    """How many are followed; 0: a redirect is returned as it came."""
    secret: Iterable[str] = ()
    """Headers that stay behind when a hop leaves the origin (beyond `SECRET_HEADERS`)."""
    off_origin: TargetPolicy | None = None
    """The SSRF policy a hop to another origin is guarded by, when the call had none."""
    check: HopCheck | None = None


@dataclass(frozen=True, slots=True)
class Hop:
    """The request a redirect asks for."""

    url: str
    method: str
    body: Any
    headers: dict[str, str]
    cross_origin: bool
    """The hop leaves the origin of the URL before it: the caller guards it like a tenant's URL."""


def origin_of(url: str) -> tuple[str, str, int]:
    """`(scheme, host, port)` with the scheme's default port: what "the same origin" compares."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or (443 if scheme == "https" else 80)


def redirect_target(url: str, location: str) -> str:
    """The absolute URL a `Location` names, relative to `url`.

    Raises:
        TransportError: a `Location` no URL parser takes (`http://[::1`, a port that is not a number):
            checked here, once, so that no later step (the SSRF check, the proxy choice) meets a URL
            it cannot take apart. The upstream's text is not quoted: it is the upstream's, not ours.
    """
    try:
        target = urljoin(url, location.strip())
        urlsplit(target).port  # noqa: B018 - parsing the port is the check
    except ValueError:
        raise TransportError(f"redirect to a malformed URL refused (from {origin_of(url)[1]})") from None
    return target


def next_hop(
    url: str,
    status: int,
    location: str,
    *,
    method: str,
    body: Any,
    headers: Mapping[str, str],
    secret: Iterable[str] = (),
) -> Hop:
    """The next request after `status` with `Location: location` from `url`.

    Raises:
        TransportError: a malformed target, a target that is not http(s), a downgrade from https to http, or a body that
            would go to another origin.
    """
    target = redirect_target(url, location)
    before, after = origin_of(url), origin_of(target)
    if after[0] not in ("http", "https") or not after[1]:
        raise TransportError(f"redirect to a non-http(s) URL refused (from {before[1]})")
    if before[0] == "https" and after[0] == "http":
        raise _refused(f"redirect from https to http refused ({before[1]} → {after[1]})", after[1])
    if status == 303 or (status in (301, 302) and method == "POST"):
        method, body = "GET", None
    cross = after != before
    kept = dict(headers)
    if cross:
        if body is not None:
            raise _refused(
                f"redirect to another origin ({after[1]}) would resend the request body; refused", after[1]
            )
        dropped = SECRET_HEADERS | {name.lower() for name in secret}
        kept = {name: value for name, value in headers.items() if name.lower() not in dropped}
    return Hop(target, method, body, kept, cross)


def _refused(message: str, upstream_host: str) -> TransportError:
    """A refused redirect; the host the upstream's `Location` named is outside text."""
    error = TransportError(message)
    error.echoed = (upstream_host,)
    return error


__all__ = [
    "MAX_REDIRECTS",
    "REDIRECT_STATUSES",
    "SECRET_HEADERS",
    "Hop",
    "HopCheck",
    "Redirects",
    "next_hop",
    "origin_of",
    "redirect_target",
]

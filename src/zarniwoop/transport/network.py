"""Network failures in the words a person uses: which host and port, and what went wrong.

aiohttp wraps the socket error a connection died of (`socket.gaierror`, `ConnectionRefusedError`,
`ssl.SSLCertVerificationError`, …) in its own exceptions, raised `from` the original; `explain`
walks that chain and names the cause. It reads error *types* and the TLS library's verification
message, never the text of an exception that may carry a URL (and with it a key).

    explain(exc, "en.wikipedia.org", 443)   # Cause("dns", "cannot resolve en.wikipedia.org")
    explain(exc, "10.0.0.5", 443)           # Cause("refused", "connection to 10.0.0.5:443 refused")
"""

from __future__ import annotations

import errno
import socket
import ssl
from typing import NamedTuple
from urllib.parse import urlsplit

import aiohttp

from ..contract.errors import TransportError

_DEFAULT_PORTS = {"http": 80, "https": 443}


def target_of(url: str) -> tuple[str, int]:
    """`(host, port)` of a URL, with the scheme's default port."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.hostname or "?", port or _DEFAULT_PORTS.get(parts.scheme, 0)


def _causes(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 12:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


class Cause(NamedTuple):
    """What a failed exchange died of: `kind` for summaries and cooldowns (`dns`, `tls`, `refused`,
    `reset`, `unreachable`, `closed`), `text` for people."""

    kind: str
    text: str


def _unresolved(host: str) -> Cause:
    return Cause("dns", f"cannot resolve {host}")


def unresolved_error(host: str) -> TransportError:
    """A host name that does not resolve, found by a lookup of Zarniwoop's own (the content
    fetcher's SSRF check) rather than by aiohttp's connector: worded as `translate_errors` words the
    connector's (`network error: cannot resolve example.org`), so search and fetch say one thing."""
    cause = _unresolved(host)
    error = TransportError(f"network error: {cause.text}")
    error.cause = cause.kind
    return error


def explain(exc: BaseException, host: str, port: int) -> Cause | None:
    """The cause of a failed exchange with `host:port`, or None when the chain names none."""
    where = f"{host}:{port}" if port else host
    for cause in _causes(exc):
        if isinstance(cause, aiohttp.ClientConnectorError) and not isinstance(
            cause, aiohttp.ClientConnectorDNSError
        ):
            cause = cause.os_error  # aiohttp's wrapper subclasses the TLS and OS errors it wraps
        if isinstance(cause, socket.gaierror | aiohttp.ClientConnectorDNSError):
            return _unresolved(host)
        if isinstance(cause, ssl.SSLCertVerificationError):
            reason = cause.verify_message or "certificate not trusted"
            return Cause("tls", f"TLS handshake with {where} failed: {reason}")
        if isinstance(cause, ssl.SSLError):
            return Cause("tls", f"TLS handshake with {where} failed ({cause.reason or type(cause).__name__})")
        if isinstance(cause, ConnectionRefusedError):
            return Cause("refused", f"connection to {where} refused")
        if isinstance(cause, ConnectionResetError | BrokenPipeError):
            return Cause("reset", f"connection to {where} reset by the peer")
        if isinstance(cause, OSError) and cause.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
            kind = "network" if cause.errno == errno.ENETUNREACH else "host"
            return Cause("unreachable", f"no route to {where} ({kind} unreachable)")
        if isinstance(cause, aiohttp.ServerDisconnectedError):
            return Cause("closed", f"{where} closed the connection before answering")
    return None


__all__ = ["Cause", "explain", "target_of", "unresolved_error"]

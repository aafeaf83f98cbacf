"""The one boundary where aiohttp's exceptions become Zarniwoop's, for every kind of traffic.

    with translate_errors("connect", 8.0, url=url):
        ...   # aiohttp raises; the caller sees ProviderTimeoutError, TransportError or a status error

A timeout → `ProviderTimeoutError`; a response head the parser refused (too many fields, a line
over the cap, not HTTP) → `TransportError` saying so; a proxy that refused or answered non-2xx →
`TransportError` naming the proxy, not the provider; every other aiohttp exception →
`TransportError`. With the request's `url` the message names host, port and cause in plain words
(`network error: cannot resolve en.wikipedia.org`, `… connection to 10.0.0.5:443 refused`,
`no answer from … within 8.0s`, `no complete answer from … within 8.0s` for the total deadline); it never carries an exception's text, which may hold a URL with a
key in it, or bytes the upstream sent.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Literal
from urllib.parse import urlsplit

import aiohttp
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong

from ..contract.errors import ProviderTimeoutError, TransportError
from .heads import AmbiguousFraming
from .network import explain, target_of
from .status import error_for_status, search_message

Stage = Literal["connect", "read", "stream"]

_STAGES = {
    "connect": ("no answer{} within {:.1f}s", ""),
    "read": ("body{} not complete within {:.1f}s", " while reading"),
    "stream": ("stream{} stalled for {:.1f}s", " while streaming"),
}


class total_deadline:
    """No exchange outlives its total deadline — connect, head and body together — whatever pace the
    other side keeps (a host dripping a byte a second never trips a read timeout). Expiry raises
    `ProviderTimeoutError` naming the host and the deadline. A class, not a generator: it wraps
    every upstream exchange.

        async with total_deadline(8.0, url=url):
            ...   # ProviderTimeoutError("no complete answer from host:443 within 8.0s") at 8 s

    `head=True`: the deadline bounds connecting and the head only (a stream's), and says so as a
    connect timeout does ("no answer from host:443 within 8.0s"). `seconds=None`: no deadline here
    (the caller's own, which began first and is no longer, ends the exchange).
    """

    __slots__ = ("_timeout", "head", "seconds", "url", "where")

    def __init__(self, seconds: float | None, *, url: str, where: str = "", head: bool = False) -> None:
        self.seconds, self.url, self.where, self.head = seconds, url, where, head
        self._timeout = asyncio.timeout(seconds) if seconds is not None else None

    async def __aenter__(self) -> None:
        if self._timeout is not None:
            await self._timeout.__aenter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._timeout is None:
            return
        try:
            await self._timeout.__aexit__(kind, exc, tb)
        except TimeoutError:
            host, port = target_of(self.url)
            prefix = f"{self.where}: " if self.where else ""
            what = "no answer" if self.head else "no complete answer"
            raise ProviderTimeoutError(
                f"{prefix}{what} from {host}:{port} within {self.seconds:.1f}s"
            ) from None


class translate_errors:
    """Raise Zarniwoop's error for any aiohttp (or socket-level) failure inside the block.

    A class rather than a generator-based context manager: it wraps every upstream exchange twice,
    and on success it costs two attribute stores (the URL is taken apart only on failure).

    Args:
        stage: what was going on (`connect`: until the head arrived; `read`: the body; `stream`: a
            stream's events), for the wording of timeouts and network errors.
        timeout: the seconds that ran out, for a timeout's message.
        where: prefixes the message (the content fetcher names the host it fetched from).
        url: the request's URL: its host and port name the other side.
    """

    __slots__ = ("stage", "timeout", "url", "where")

    def __init__(self, stage: Stage, timeout: float, *, where: str = "", url: str | None = None) -> None:
        self.stage, self.timeout, self.where, self.url = stage, timeout, where, url

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, Exception):
            error = _translated(exc, self.stage, self.timeout, self.where, self.url)
            if error is not None:
                raise error from exc


def _translated(
    exc: Exception, stage: Stage, timeout: float, where: str, url: str | None
) -> Exception | None:
    """Zarniwoop's error for `exc`, or None for an exception that is not the network's."""
    timeout_text, context = _STAGES[stage]
    prefix = f"{where}: " if where else ""
    host, port = target_of(url) if url else ("", 0)
    origin = f" from {host}:{port}" if host else ""
    if isinstance(exc, asyncio.TimeoutError | aiohttp.ServerTimeoutError):
        return ProviderTimeoutError(prefix + timeout_text.format(origin, timeout))
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        return _network(
            f"{prefix}network error{context}: {_proxy(exc)} answered HTTP {exc.status}"
            + (f" for {host}:{port}" if host else ""),
            "proxy",
        )
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        proxy_host, proxy_port = exc.host, exc.port or 0
        found = explain(exc, proxy_host, proxy_port)
        why = found.text if found else type(exc).__name__
        return _network(
            f"{prefix}network error{context}: cannot reach proxy {proxy_host}:{proxy_port} ({why})", "proxy"
        )
    if isinstance(exc, AmbiguousFraming):
        return _network(
            f"{prefix}response head{origin} refused: ambiguous framing "
            "(a Transfer-Encoding other than chunked alone)",
            "malformed",
        )
    if isinstance(exc, aiohttp.ClientResponseError):
        head = _refused_head(exc)
        if head is not None:
            return TransportError(f"{prefix}response head{origin} refused: {head}")
        if exc.status >= 400 and exc.headers is not None:
            return error_for_status(exc.status, exc.headers, prefix + search_message(exc.status))
        return TransportError(f"{prefix}network error{context}: {type(exc).__name__}")
    if isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
        return TransportError(f"{prefix}request not sent{context}: not a valid http(s) URL")
    if isinstance(exc, aiohttp.ClientError | OSError):
        cause = explain(exc, host, port) if host else None
        if cause is not None:
            return _network(f"{prefix}network error{context}: {cause.text}", cause.kind)
        detail = f"{type(exc).__name__} with {host}:{port}" if host else type(exc).__name__
        return TransportError(f"{prefix}network error{context}: {detail}")
    return None


def _network(message: str, kind: str) -> TransportError:
    """A `TransportError` whose `cause` says what kind of network failure it was."""
    error = TransportError(message)
    error.cause = kind
    return error


def _refused_head(exc: aiohttp.ClientResponseError) -> str | None:
    """Why the parser refused a response head, or None when `exc` is about something else. aiohttp
    reports it as a 400 whose cause is a fresh `HttpProcessingError` carrying the parser's message
    (the parser's own exception type is lost), so the two caps are told apart by that message; a
    change of wording only makes the reason less specific (tests/transport/test_hostile_upstreams.py)."""
    cause = exc.__cause__
    if isinstance(cause, LineTooLong):
        return "a line or header field over the size cap"
    if isinstance(cause, HttpProcessingError):
        text = str(cause.message or "").lower()
        if "too many headers" in text:
            return "more header fields than the cap"
        if text.startswith("got more than"):
            return "a line or header field over the size cap"
        return "not a valid HTTP response head"
    return None


def _proxy(exc: aiohttp.ClientHttpProxyError) -> str:
    """`proxy host:port` of a failed CONNECT (aiohttp's request info holds the proxy's URL)."""
    url = str(exc.request_info.real_url) if exc.request_info is not None else ""
    parts = urlsplit(url)
    return f"proxy {parts.hostname}:{parts.port}" if parts.hostname else "the proxy"


__all__ = ["Stage", "total_deadline", "translate_errors"]

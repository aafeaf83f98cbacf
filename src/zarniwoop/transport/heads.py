"""The checks on a message head the HTTP parser does not make: a request's headers before a byte is
sent, and a response's framing once its head arrived.

aiohttp reads a response whose `Transfer-Encoding` ends in another coding than `chunked` (`chunked,
identity`, `xchunked`) until the connection closes, as RFC 9112 §6.3 allows; but a proxy or cache
between us and the upstream may frame the same bytes otherwise (chunked, or by a `Content-Length`),
and that disagreement is how a response is smuggled into another's place. Like h11, only
`Transfer-Encoding: chunked` alone is accepted; any other is refused as a malformed response before
its body is read, through aiohttp's public `response_class` (not the parser's internals)."""

from __future__ import annotations

import re
from collections.abc import Mapping

import aiohttp
from aiohttp.connector import Connection

from ..contract.errors import TransportError

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_BAD_VALUE = re.compile(r"[\r\n\x00]")


def check_headers(headers: Mapping[str, str]) -> None:
    """Refuse, before a byte is sent, a header that would split the request (CR, LF or NUL in a value)
    or a name that is not an HTTP token. The value is never shown: it may be a key."""
    for name, value in headers.items():
        if not _TOKEN.match(name):
            raise TransportError(f"request not sent: {name!r} is not a valid header name")
        if _BAD_VALUE.search(value):
            raise TransportError(f"request not sent: the value of header {name!r} holds a line break or NUL")


class AmbiguousFraming(Exception):
    """A response head whose body's end is ambiguous; `translate_errors` words it for people."""


class FramedResponse(aiohttp.ClientResponse):
    """aiohttp's response (the session's public `response_class`), refused at its head when its
    `Transfer-Encoding` is anything but one field saying `chunked`.

    Checked here, as the head is parsed: when the body came whole with the head, aiohttp has
    already put the connection back in the pool before `session.request` returns, so it is closed
    here, before any other request could be sent over it."""

    async def start(self, connection: Connection) -> aiohttp.ClientResponse:
        protocol = connection.protocol
        await super().start(connection)
        fields = self.headers.getall("Transfer-Encoding", ())
        codings = [c.strip(" \t").lower() for value in fields for c in value.split(",")]
        if codings and codings != ["chunked"]:
            if protocol is not None:
                protocol.close()
            raise AmbiguousFraming
        return self


__all__ = ["AmbiguousFraming", "FramedResponse", "check_headers"]

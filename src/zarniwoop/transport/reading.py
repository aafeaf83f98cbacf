"""Reading an answer the transport received: its headers, its body whole (refused past a cap, or cut
at one), or as it arrives (`Streamed`). Every failure of the network while reading is a Zarniwoop
error (`translate_errors`).

    content = await read_capped(response, cap, "read", timeout, url)    # ResponseTooLargeError past cap
    body, truncated = await read_cut(response, cap, timeout, url)      # the content store's rule
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import aiohttp

from ..contract.errors import ResponseTooLargeError
from .errors import Stage, translate_errors

DEFAULT_MAX_BYTES = 8 * 1024 * 1024
"""A search answer larger than this is not a search answer; reading stops there."""
STREAM_MAX_BYTES = 64 * 1024 * 1024
"""A stream (an LLM's answer token by token) larger than this is cut with an error."""
RATE_LIMIT_HEADER_PREFIXES = ("x-ratelimit", "ratelimit", "x-rate-limit", "retry-after")
_Body = TypeVar("_Body")


@dataclass(frozen=True, slots=True)
class Answer(Generic[_Body]):
    """The last answer of a call (`HttpTransport.follow`): status, headers (`headers_of`), the URL it
    came from, its body as the caller's reader read it, and the URLs the redirects went to."""

    status: int
    headers: dict[str, str]
    url: str
    body: _Body
    hops: tuple[str, ...]


def headers_of(response: aiohttp.ClientResponse) -> dict[str, str]:
    """The answer's headers with lower-case names; a repeated field joined with `, ` (RFC 9110 §5.3).
    Linear in the head's size, which the parser already capped."""
    merged: dict[str, str] = {}
    for name, value in response.headers.items():
        key = name.lower()
        merged[key] = f"{merged[key]}, {value}" if key in merged else value
    return merged


def rate_limit_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The upstream headers worth passing on: rate-limit state only (never cookies or auth echoes)."""
    return {k.lower(): v for k, v in headers.items() if k.lower().startswith(RATE_LIMIT_HEADER_PREFIXES)}


async def read_capped(
    response: aiohttp.ClientResponse, cap: int, stage: Stage, timeout: float, url: str
) -> bytes:
    """The body as decoded, refused with `ResponseTooLargeError` as soon as it passes `cap` bytes (a
    declared `Content-Length` over the cap is refused before reading)."""
    declared = response.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > cap:
        raise ResponseTooLargeError(f"response of {declared} bytes exceeds the {cap}-byte cap")
    chunks: list[bytes] = []
    size = 0
    with translate_errors(stage, timeout, url=url):
        async for chunk in response.content.iter_any():
            size += len(chunk)
            if size > cap:
                raise ResponseTooLargeError(f"response exceeds the {cap}-byte cap")
            chunks.append(chunk)
    return b"".join(chunks)


async def read_cut(
    response: aiohttp.ClientResponse, cap: int, timeout: float, url: str, where: str = ""
) -> tuple[bytes, bool]:
    """At most `cap` bytes of the body and whether there was more: reading stops at the cap, the rest
    is never downloaded (a page is cut, not refused: the content store keeps what fits)."""
    with translate_errors("read", timeout, where=where, url=url):
        return await _cut(response, cap)


async def _cut(response: aiohttp.ClientResponse, cap: int) -> tuple[bytes, bool]:
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


class Streamed:
    """An answer being read: status and headers have arrived, the body comes through `chunks`,
    `lines` or `text`; every failure is a Zarniwoop error (`translate_errors`, stage `stream`)."""

    __slots__ = ("_read", "_response", "headers", "status", "timeout", "url")

    def __init__(self, response: aiohttp.ClientResponse, url: str, timeout: float) -> None:
        self._response = response
        self.status = response.status
        self.headers = headers_of(response)
        self.url = url
        self.timeout = timeout
        self._read = 0

    async def read(self, cap: int = DEFAULT_MAX_BYTES) -> bytes:
        """The whole (rest of the) body, refused past `cap`."""
        return await read_capped(self._response, cap, "stream", self.timeout, self.url)

    async def chunks(self, cap: int = STREAM_MAX_BYTES) -> AsyncIterator[bytes]:
        """The body as it arrives, decoded; cut with `ResponseTooLargeError` past `cap` in all."""
        iterator = self._response.content.iter_any().__aiter__()
        while True:
            with translate_errors("stream", self.timeout, url=self.url):
                try:
                    chunk = await iterator.__anext__()
                except StopAsyncIteration:
                    return
            self._read += len(chunk)
            if self._read > cap:
                raise ResponseTooLargeError(f"stream exceeds {cap} bytes")
            yield chunk

    async def text(self) -> AsyncIterator[str]:
        """The body as UTF-8 text, chunk by chunk (a character split between chunks is kept whole)."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        async for chunk in self.chunks():
            text = decoder.decode(chunk)
            if text:
                yield text
        rest = decoder.decode(b"", final=True)
        if rest:
            yield rest

    async def lines(self, max_line: int = DEFAULT_MAX_BYTES) -> AsyncIterator[str]:
        """The body line by line (`\\n`, `\\r\\n`), without the line ends; a line longer than
        `max_line` bytes is refused."""
        pending = b""
        async for chunk in self.chunks():
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for line in complete:
                yield line.rstrip(b"\r").decode("utf-8", "replace")
            if len(pending) > max_line:
                raise ResponseTooLargeError(f"a stream line exceeds {max_line} bytes")
        if pending:
            yield pending.rstrip(b"\r").decode("utf-8", "replace")


__all__ = [
    "DEFAULT_MAX_BYTES",
    "STREAM_MAX_BYTES",
    "Answer",
    "Streamed",
    "headers_of",
    "rate_limit_headers",
    "read_capped",
    "read_cut",
]

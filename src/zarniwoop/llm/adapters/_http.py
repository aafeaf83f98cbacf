"""Sending chat requests over the shared httpx2 pool; stream framing (SSE, NDJSON, JSON array).

The one place where httpx2 exceptions of LLM traffic become contract errors (`TransportError`,
`ProviderTimeoutError`, `ResponseTooLargeError`), like `transport/http.py` for search.

`guard`: the call's base URL was set below system level (`config/trust.py`), so the request goes
through the search transport's SSRF check (`HttpTransport.pin`: the address checked after DNS
resolution and connected to as checked, over an unpooled client). Redirects are never followed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import httpx2

from ...contract.errors import ParseError, ResponseTooLargeError
from ...transport.http import translate_errors

if TYPE_CHECKING:
    from ...contract.protocol import RequestSpec
    from ...transport.http import HttpTransport
    from .base import WireAdapter

MAX_BODY_BYTES = 16 * 1024 * 1024


async def _open(
    client: httpx2.AsyncClient, spec: RequestSpec, timeout: float, guard: HttpTransport | None
) -> httpx2.Response:
    headers = dict(spec.headers)
    target, extensions = spec.url, dict[str, Any]()
    if guard is not None:
        target, extensions = await guard.pin(spec.url, headers)
        client = guard.guarded_client()
    with translate_errors("connect", timeout, url=spec.url):
        request = client.build_request(
            spec.method,
            target,
            params=list(spec.params) or None,
            headers=headers,
            json=spec.json_body,
            timeout=httpx2.Timeout(timeout, connect=min(timeout, 10.0)),
            extensions=extensions,
        )
        return await client.send(request, stream=True)


async def send(
    client: httpx2.AsyncClient, spec: RequestSpec, timeout: float, guard: HttpTransport | None = None
) -> tuple[int, dict[str, str], bytes]:
    """POST one request; `(status, headers, body)` whatever the status."""
    response = await _open(client, spec, timeout, guard)
    try:
        with translate_errors("read", timeout, url=spec.url):
            body = await _read(response)
    finally:
        await response.aclose()
    return response.status_code, dict(response.headers), body


def summary(status: int) -> bytes:
    """What an untrusted endpoint's error says instead of its body: the status's reason phrase (none
    for a status without one, such as 529)."""
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


async def _read(response: httpx2.Response) -> bytes:
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise ResponseTooLargeError(f"chat response exceeds {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def stream_payloads(
    client: httpx2.AsyncClient,
    spec: RequestSpec,
    timeout: float,
    adapter: WireAdapter,
    instance: str,
    guard: HttpTransport | None = None,
    *,
    summarise: bool = False,
) -> AsyncIterator[tuple[str | None, Any]]:
    """Decoded stream events `(event name or None, JSON payload)`; a non-2xx status raises the wire's
    error (`summarise`: from the status alone, the body of an untrusted endpoint is not read)."""
    response = await _open(client, spec, timeout, guard)
    try:
        with translate_errors("stream", timeout, url=spec.url):
            if response.status_code >= 400:
                body = summary(response.status_code) if summarise else await _read(response)
                raise adapter.error(response.status_code, dict(response.headers), body, instance)
            content_type = response.headers.get("content-type", "")
            framing = "sse" if "event-stream" in content_type else adapter.framing
            if framing == "json-array":
                decoder = JsonArrayDecoder()
                async for chunk in response.aiter_text():
                    for item in decoder.feed(chunk):
                        yield None, item
                decoder.close()
                return
            sse = SseDecoder()
            async for line in response.aiter_lines():
                events = sse.feed_line(line) if framing == "sse" else ndjson_line(line)
                for event, payload in events:
                    if payload is _DONE:
                        return
                    yield event, payload
            for event, payload in sse.flush():
                if payload is not _DONE:
                    yield event, payload
    finally:
        await response.aclose()


_DONE = object()
"""OpenAI's `data: [DONE]` terminator."""


class SseDecoder:
    """Server-sent events: `event:` names the next event, `data:` lines accumulate, a blank line
    dispatches. Data lines may carry trailing padding (Anthropic's recorded streams do)."""

    def __init__(self) -> None:
        self._event: str | None = None
        self._data: list[str] = []

    def feed_line(self, line: str) -> list[tuple[str | None, Any]]:
        line = line.rstrip("\r\n")
        if not line:
            return self.flush()
        if line.startswith(":"):
            return []
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self._event = value.strip()
        elif name == "data":
            self._data.append(value)
        return []

    def flush(self) -> list[tuple[str | None, Any]]:
        if not self._data:
            self._event = None
            return []
        data = "\n".join(self._data).strip()
        event, self._event, self._data = self._event, None, []
        if data == "[DONE]":
            return [(event, _DONE)]
        return [(event, _load(data))]

    def feed_text(self, text: str) -> Iterator[tuple[str | None, Any]]:
        """A whole recorded SSE body (tests, replays)."""
        for line in text.splitlines():
            yield from self.feed_line(line)
        yield from self.flush()


def ndjson_line(line: str) -> list[tuple[str | None, Any]]:
    line = line.strip()
    return [(None, _load(line))] if line else []


class JsonArrayDecoder:
    """Gemini's `streamGenerateContent` without `alt=sse`: one JSON array, streamed element by element."""

    def __init__(self) -> None:
        self._buffer = ""
        self._decoder = json.JSONDecoder()
        self._started = False

    def feed(self, text: str) -> list[Any]:
        self._buffer += text
        items = []
        while True:
            stripped = self._buffer.lstrip()
            if not self._started:
                if not stripped:
                    break
                if stripped[0] != "[":
                    raise ParseError("stream is not a JSON array")
                self._started = True
                stripped = stripped[1:]
            stripped = stripped.lstrip().lstrip(",").lstrip()
            if not stripped or stripped[0] == "]":
                self._buffer = stripped
                break
            try:
                item, end = self._decoder.raw_decode(stripped)
            except json.JSONDecodeError:
                self._buffer = stripped  # incomplete element: wait for more
                break
            items.append(item)
            self._buffer = stripped[end:]
        return items

    def close(self) -> None:
        if self._buffer.strip() not in ("", "]"):
            raise ParseError("stream ended inside a JSON array element")


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"stream event is not JSON ({exc.msg})") from None

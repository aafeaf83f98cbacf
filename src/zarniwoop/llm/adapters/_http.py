"""Sending chat requests over the process's one transport; stream framing (SSE, NDJSON, JSON array).

`guarded`: the call's base URL was set below system level (`config/trust.py`), so every connect of
the request passes the transport's SSRF policy (the address checked after DNS resolution and
connected to as checked). Redirects are never followed: an LLM endpoint that redirects is an error.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from ...contract.errors import ParseError

if TYPE_CHECKING:
    from ...contract.protocol import RequestSpec
    from ...transport.http import HttpTransport
    from .base import WireAdapter

MAX_BODY_BYTES = 16 * 1024 * 1024
CONNECT_TIMEOUT = 10.0
"""Seconds to connect to an LLM endpoint, however long the call itself may take."""


async def send(
    http: HttpTransport, spec: RequestSpec, timeout: float, guarded: bool = False
) -> tuple[int, dict[str, str], bytes]:
    """POST one request; `(status, headers, body)` whatever the status."""
    raw = await http.send(
        spec,
        timeout=timeout,
        max_bytes=MAX_BODY_BYTES,
        guarded=guarded,
        max_redirects=0,
        connect_timeout=min(timeout, CONNECT_TIMEOUT),
    )
    return raw.status, dict(raw.headers), raw.body


def summary(status: int) -> bytes:
    """What an untrusted endpoint's error says instead of its body: the status's reason phrase (none
    for a status without one, such as 529)."""
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


async def stream_payloads(
    http: HttpTransport,
    spec: RequestSpec,
    timeout: float,
    adapter: WireAdapter,
    instance: str,
    guarded: bool = False,
    *,
    summarise: bool = False,
) -> AsyncIterator[tuple[str | None, Any]]:
    """Decoded stream events `(event name or None, JSON payload)`; a non-2xx status raises the wire's
    error (`summarise`: from the status alone, the body of an untrusted endpoint is not read)."""
    async with http.stream(
        spec, timeout=timeout, guarded=guarded, connect_timeout=min(timeout, CONNECT_TIMEOUT)
    ) as response:
        if response.status >= 400:
            body = summary(response.status) if summarise else await response.read(MAX_BODY_BYTES)
            raise adapter.error(response.status, response.headers, body, instance)
        content_type = response.headers.get("content-type", "")
        framing = "sse" if "event-stream" in content_type else adapter.framing
        if framing == "json-array":
            decoder = JsonArrayDecoder()
            async for chunk in response.text():
                for item in decoder.feed(chunk):
                    yield None, item
            decoder.close()
            return
        sse = SseDecoder()
        async for line in response.lines():
            events = sse.feed_line(line) if framing == "sse" else ndjson_line(line)
            for event, payload in events:
                if payload is _DONE:
                    return
                yield event, payload
        for event, payload in sse.flush():
            if payload is not _DONE:
                yield event, payload


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

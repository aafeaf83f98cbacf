"""The HTTP/1.1 parser `zarniwoop serve` runs: uvicorn's httptools protocol with a cap on request heads.

httptools (llhttp, C) costs about 40 % less CPU per request than h11 (pure Python), but uvicorn
sets no limit on it: a request line plus headers of any size would be buffered. `CappedHttpTools`
counts a head's bytes as they arrive and answers `431 Request Header Fields Too Large` (and closes
the connection) once they pass `MAX_HEADER_BYTES`:

- while a head is incomplete, every byte received counts (httptools buffers a partial header line
  itself, so this is what bounds memory: at most the cap plus one read);
- a head that arrived whole in one read is measured exactly (URL, names and values) before the
  request reaches the app.

uvicorn logs such a refusal as it logs any request its parser stops ("Invalid HTTP request
received."), since the 431 is sent from inside its own `data_received`.

Without httptools installed, `http_protocol()` is `"h11"`, whose `max_incomplete_event_size`
`serve` sets to the same cap.

    uvicorn.Config(app, http=http_protocol(), h11_max_incomplete_event_size=MAX_HEADER_BYTES)
"""

from __future__ import annotations

import asyncio
from typing import Any

from .guard import MAX_HEADER_BYTES

_BODY = b"request line and headers over %d bytes" % MAX_HEADER_BYTES
_ANSWER_431 = b"".join(
    [
        b"HTTP/1.1 431 Request Header Fields Too Large\r\n",
        b"content-type: text/plain; charset=utf-8\r\n",
        b"content-length: %d\r\n" % len(_BODY),
        b"connection: close\r\n\r\n",
        _BODY,
    ]
)


class _HeadTooLarge(Exception):
    pass


def http_protocol() -> type[asyncio.Protocol] | str:
    """The protocol class for `uvicorn.Config(http=…)`: the capped httptools one, else `"h11"`."""
    try:
        import httptools  # noqa: F401  (uvicorn's httptools protocol needs it)
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return "h11"

    class CappedHttpTools(HttpToolsProtocol):
        # Only uvicorn's public hooks are overridden (the parser callbacks, `data_received`,
        # `send_400_response`), each calling uvicorn's own; tests/test_library_canaries.py checks
        # they are still there. Our state has a `_capped_` prefix so it cannot shadow uvicorn's.
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._capped_head_open = True
            self._capped_head_raw = 0
            """Bytes received since the current head began (a head still incomplete)."""
            self._capped_head_exact = 0
            """URL, header names and values of the current head, as parsed."""
            self._capped_refused = False
            """The 431 is sent: nothing more is parsed, and uvicorn's own 400 is not sent."""

        def data_received(self, data: bytes) -> None:
            if self._capped_refused:
                return
            if self._capped_head_open:
                self._capped_head_raw += len(data)
            super().data_received(data)
            if (
                not self._capped_refused
                and self._capped_head_open
                and self._capped_head_raw > MAX_HEADER_BYTES
            ):
                self._refuse()

        def send_400_response(self, msg: str) -> None:
            # uvicorn answers a parser error with a 400; when the error is our `_HeadTooLarge`,
            # the 431 has gone out already and the connection is closing.
            if not self._capped_refused:
                super().send_400_response(msg)

        def _refuse(self) -> None:
            self._capped_refused = True
            self.transport.write(_ANSWER_431)
            self.transport.close()

        def on_message_begin(self) -> None:
            self._capped_head_exact = 0
            super().on_message_begin()

        def on_url(self, url: bytes) -> None:
            self._count(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._count(len(name) + len(value) + 4)
            super().on_header(name, value)

        def _count(self, size: int) -> None:
            self._capped_head_exact += size
            if self._capped_head_exact > MAX_HEADER_BYTES:
                self._refuse()
                raise _HeadTooLarge  # stops httptools before the request reaches the app

        def on_headers_complete(self) -> None:
            self._capped_head_open, self._capped_head_raw = False, 0
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._capped_head_open = True
            super().on_message_complete()

    return CappedHttpTools


__all__ = ["http_protocol"]

"""The request guard: the token is checked before any body byte is read, and bodies are capped.

A plain ASGI middleware in front of the app (issue 11: a 300 MB body without a token was read and
parsed before the 401). For `/v1/*`, `/mcp` and `/metrics`:

1. the `Authorization` header is verified first — a missing or bad token is a 401 while the body
   is still unread on the socket; the principal is left in the ASGI scope (`PRINCIPAL_SCOPE_KEY`)
   so the route's dependency does not verify it a second time. On an LLM gateway call
   (`deps.REMEMBERED_PATHS`: chat completions, messages, responses, embeddings) a token the process
   remembers is not looked up: its principal goes to `REMEMBERED_SCOPE_KEY`, and the call's budget
   reservation confirms it unrevoked in its own round trip (`gateway_caller.py`, issue 42);
2. a `Content-Length` over the path's cap is a 413 at once; a body without a length (chunked) is
   counted as it is read and cut with a 413 when it passes the cap. The cap is `MAX_BODY_BYTES`,
   but `GATEWAY_MAX_BODY_BYTES` on the LLM gateway's paths, whose bodies carry whole conversations
   and images.

Both answers use the one error shape (`errors.error_body`) — OpenAI's on the gateway's paths
(`openai_wire.GATEWAY_PATHS`), Anthropic's on `/v1/messages` (`anthropic_wire.MESSAGES_PATHS`,
where the token may also come as `x-api-key`, the anthropic SDK's header), whose clients parse only that. Header sizes are capped by the HTTP
parser `serve` runs: httptools with the count of `server_protocol.py` (a 431), or h11's own
`max_incomplete_event_size` where httptools is not installed.

    app.add_middleware(RequestGuard)        # create_app does this
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from starlette.exceptions import HTTPException

from .anthropic_answers import error_json as anthropic_error
from .anthropic_wire import MESSAGES_PATHS, authorization
from .deps import (
    PRINCIPAL_SCOPE_KEY,
    REMEMBERED_PATHS,
    REMEMBERED_SCOPE_KEY,
    authenticate_header,
    recall_header,
)
from .errors import error_body
from .openai_wire import GATEWAY_PATHS, error_json

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from .state import AppState

MAX_BODY_BYTES = 1024 * 1024
"""1 MiB: a search or tool call is a few hundred bytes; nothing else the API accepts comes near it."""
GATEWAY_MAX_BODY_BYTES = 32 * 1024 * 1024
"""32 MiB on the gateway's paths: an agent's request carries its whole conversation, tool results and
images as base64 (one screenshot is 1–3 MB), so 1 MiB refused ordinary calls; 32 MB is Anthropic's own
cap for a Messages request. The body is still read to its end before the upstream is asked."""
_GATEWAY = GATEWAY_PATHS + MESSAGES_PATHS
MAX_HEADER_BYTES = 16 * 1024
"""The request line and headers together (`server_protocol.py`; h11's `max_incomplete_event_size`)."""
_GUARDED = ("/v1/", "/mcp", "/metrics")
_SIGNED = ("/v1/image",)
"""GETs whose signature is the capability (an `<img>` cannot send a bearer token; no body)."""


def too_large(cap: int = MAX_BODY_BYTES) -> HTTPException:
    return HTTPException(413, f"request body over {cap} bytes")


class RequestGuard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int = MAX_BODY_BYTES,
        gateway_max_body_bytes: int = GATEWAY_MAX_BODY_BYTES,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.gateway_max_body_bytes = gateway_max_body_bytes

    def cap(self, path: str) -> int:
        """The most body bytes a request to `path` may send."""
        return self.gateway_max_body_bytes if path.startswith(_GATEWAY) else self.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not path.startswith(_GUARDED) or path.startswith(_SIGNED):
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", ())}
        state: AppState = scope["app"].state.zarniwoop
        header = headers.get(b"authorization")
        credential = header.decode("latin-1") if header else None
        if path.startswith(MESSAGES_PATHS):
            key = headers.get(b"x-api-key")
            credential = authorization(credential, key.decode("latin-1") if key else None)
        # a remembered token's revocation is checked in the call's reservation (deps.REMEMBERED_PATHS)
        remembered = recall_header(state, credential) if path in REMEMBERED_PATHS else None
        try:
            principal = remembered or await authenticate_header(state, credential)
        except HTTPException as exc:
            await _answer(send, exc.status_code, _error(scope, exc.status_code, str(exc.detail)), exc.headers)
            return
        length = headers.get(b"content-length")
        cap = self.cap(path)
        if length is not None and (not length.isdigit() or int(length) > cap):
            status = 413 if length.isdigit() else 400
            message = str(too_large(cap).detail) if status == 413 else "Content-Length is not a number"
            await _answer(send, status, _error(scope, status, message))
            return
        scope[REMEMBERED_SCOPE_KEY if remembered else PRINCIPAL_SCOPE_KEY] = principal
        if length is not None:  # the server delivers at most Content-Length bytes
            await self.app(scope, receive, send)
            return
        await self._counted(scope, receive, send, cap)

    async def _counted(self, scope: Scope, receive: Receive, send: Send, cap: int) -> None:
        read = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal read
            message = await receive()
            read += len(message.get("body", b""))
            if read > cap:
                raise too_large(cap)  # FastAPI re-raises HTTPException from body reading: a 413
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except HTTPException as exc:  # a plain ASGI endpoint (MCP) let it through
            if exc.status_code != 413 or started:
                raise
            await _answer(send, 413, _error(scope, 413, str(exc.detail)))


def _error(scope: Scope, status: int, message: str) -> dict[str, object]:
    if str(scope.get("path", "")).startswith(MESSAGES_PATHS):
        return anthropic_error(status, message)
    if str(scope.get("path", "")).startswith(GATEWAY_PATHS):
        return error_json(
            message, "invalid_request_error", None, "invalid_api_key" if status == 401 else None
        )
    return error_body(message)


async def _answer(
    send: Send, status: int, body: dict[str, object], headers: Mapping[str, str] | None = None
) -> None:
    payload = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    # `connection: close`: the unread body is still on the socket; the server drops it with the connection.
    raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


__all__ = [
    "GATEWAY_MAX_BODY_BYTES",
    "MAX_BODY_BYTES",
    "MAX_HEADER_BYTES",
    "PRINCIPAL_SCOPE_KEY",
    "RequestGuard",
]

"""The MCP streamable-HTTP endpoint at `/mcp`, behind the same bearer tokens as the HTTP API.

A plain ASGI app: it authenticates the `Authorization` header, leaves the `Principal` in the ASGI
scope for the tools (`surfaces.mcp.http_principal`), and hands the request to the MCP session
manager that the app's lifespan runs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from fastapi import HTTPException

from ..mcp import PRINCIPAL_KEY
from .deps import authenticate_header
from .errors import error_body

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from .state import AppState


class MCPEndpoint:
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state: AppState = scope["app"].state.zarniwoop
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            principal = await authenticate_header(state, headers.get("authorization"))
        except HTTPException as exc:
            await _send_json(send, exc.status_code, error_body(str(exc.detail)), exc.headers or {})
            return
        if state.mcp_sessions is None:
            await _send_json(send, 503, error_body("the MCP endpoint is not running"), {})
            return
        await state.mcp_sessions.handle_request({**scope, PRINCIPAL_KEY: principal}, receive, send)


async def _send_json(send: Send, status: int, body: dict[str, object], headers: dict[str, str]) -> None:
    payload = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


__all__ = ["MCPEndpoint"]

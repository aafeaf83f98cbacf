"""The MCP streamable-HTTP endpoint at `/mcp`, behind the same bearer tokens as the HTTP API.

A plain ASGI app: it authenticates the `Authorization` header, resolves the scope the calls act on
(the token's, or `/mcp?tenant=…&project=…` when the token may use that one — else a 403) and the
agent profile its searches route through (`/mcp?profile=research-agent`), leaves
the `Principal` narrowed to that scope in the ASGI scope for the tools
(`surfaces.mcp.http_principal`), and hands the request to the MCP session manager that the app's
lifespan runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from fastapi import HTTPException

from ...contract.errors import AccessDeniedError, InvalidRequestError
from ...dispatch.profiles import ProfileChoice
from ...tenancy.tokens import Principal
from ..mcp import PRINCIPAL_KEY, PROFILE_KEY
from .deps import PRINCIPAL_SCOPE_KEY, authenticate_header
from .errors import error_body

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from .state import AppState


class MCPEndpoint:
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state: AppState = scope["app"].state.zarniwoop
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        principal = scope.get(PRINCIPAL_SCOPE_KEY)  # verified by the guard before the body was read
        if not isinstance(principal, Principal):
            try:
                principal = await authenticate_header(state, headers.get("authorization"))
            except HTTPException as exc:
                await _send_json(send, exc.status_code, error_body(str(exc.detail)), exc.headers or {})
                return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        try:
            target = principal.scope_for(_one(query, "tenant"), _one(query, "project"))
            profile = ProfileChoice(_one(query, "profile") or None, principal.profile)
            profile.pick()  # malformed, or another profile than the token's binding: refused up front
        except InvalidRequestError as exc:  # a blank scope, or a name outside the one name rule
            await _send_json(send, 422, error_body(exc.message, exc.field), {})
            return
        except AccessDeniedError as exc:
            await _send_json(send, 403, error_body(exc.message), {})
            return
        if state.mcp_sessions is None:
            await _send_json(send, 503, error_body("the MCP endpoint is not running"), {})
            return
        narrowed = principal.narrowed(target)
        await state.mcp_sessions.handle_request(
            {**scope, PRINCIPAL_KEY: narrowed, PROFILE_KEY: profile.asked}, receive, send
        )


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0][:100] if values else None


async def _send_json(send: Send, status: int, body: dict[str, object], headers: Mapping[str, str]) -> None:
    payload = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


__all__ = ["MCPEndpoint"]

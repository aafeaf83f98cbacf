"""The MCP streamable-HTTP endpoint at `/mcp`, behind the same bearer tokens as the HTTP API.

A plain ASGI app: it authenticates the `Authorization` header, resolves the scope the calls act on
(the token's, or `/mcp?tenant=…&project=…` when the token may use that one — else a 403) and the
agent profile its searches route through (`/mcp?profile=research-agent`), leaves
the `Principal` narrowed to that scope in the ASGI scope for the tools
(`surfaces.mcp.http_principal`), and hands the request to the MCP session manager.

The MCP server and its session managers are built at the first `/mcp` request (`LazyMCP`): the
SDK's import is about a third of `zarniwoop serve`'s start-up (0.45 of 1.3 s of CPU), which a
server whose clients speak only the HTTP API need not pay.

Two stateless transports of the SDK serve it: a client whose `Accept` names `text/event-stream`
(with JSON) gets each `tools/call` as an SSE stream — `notifications/progress` for the steps of
`research_investigate` and `research_rich`, then the result —, one that accepts only JSON gets the
one JSON answer. Neither keeps a session, so any worker of `serve --workers N` answers any request.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from fastapi import HTTPException
from starlette.requests import Request

from ...contract.errors import AccessDeniedError, InvalidRequestError
from ...dispatch.profiles import ProfileChoice
from ...tenancy.tokens import Principal
from .deps import PRINCIPAL_SCOPE_KEY, authenticate_header
from .errors import error_body

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.types import Receive, Scope, Send

    from ...tasks.runner import TaskRunner
    from ...tools.registry import Toolbox
    from .allowed_hosts import HostCheck
    from .state import AppState


@dataclass(frozen=True, slots=True)
class MCPTransports:
    """The SDK's two stateless session managers for one server; the app's lifespan runs both."""

    json: StreamableHTTPSessionManager
    """One JSON answer per request (`Accept: application/json`)."""
    stream: StreamableHTTPSessionManager
    """An SSE stream per request: the request's notifications, then its answer."""

    def for_request(self, scope: Scope) -> StreamableHTTPSessionManager:
        from mcp.server.streamable_http import check_accept_headers  # loaded with the transports

        has_json, has_sse = check_accept_headers(Request(scope))
        return self.stream if has_json and has_sse else self.json


def mcp_transports(server: MCPServer[Any], hosts: HostCheck | None) -> MCPTransports:
    """Both transports of `server`, checking `Host` and `Origin` against `hosts` (None: no check;
    `allowed_hosts.py` says which names and why)."""
    from mcp.server.transport_security import TransportSecuritySettings

    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=hosts is not None,
        allowed_hosts=list(hosts.hosts) if hosts else [],
        allowed_origins=list(hosts.origins) if hosts else [],
    )

    def manager(json_response: bool) -> StreamableHTTPSessionManager:
        # each call builds a fresh manager and leaves it as `server.session_manager`
        server.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=True,
            json_response=json_response,
            transport_security=security,
        )
        return server.session_manager

    return MCPTransports(json=manager(True), stream=manager(False))


class LazyMCP:
    """The MCP server of the app's toolbox and its two transports, built at the first request.

    Their session managers run in a task of their own (an anyio task group must be left by the task
    that entered it, so neither a request nor the lifespan can hold them): it enters both, says
    they are ready, and leaves them when the app's lifespan calls `aclose`."""

    def __init__(self, toolbox: Toolbox, hosts: HostCheck | None, tasks: TaskRunner | None = None) -> None:
        self._toolbox = toolbox
        self._hosts = hosts
        self._tasks = tasks
        self._ready: asyncio.Future[MCPTransports] | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    async def transports(self) -> MCPTransports:
        if self._ready is None:  # the first request starts them; those meanwhile wait for the same
            self._ready = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._serve(self._ready), name="zarniwoop-mcp-sessions")
        # shield: a request cancelled while waiting must not cancel the start the others wait for
        return await asyncio.shield(self._ready)

    async def _serve(self, ready: asyncio.Future[MCPTransports]) -> None:
        try:
            # the import in a thread: ~0.5 s of CPU that would otherwise stall every other request
            # of this worker once (the GIL is handed back to the event loop as it goes)
            tools = await asyncio.to_thread(importlib.import_module, "..mcp", __package__)
            server = tools.build_mcp_server(
                self._toolbox, tools.http_principal, tools.http_profile, tasks=self._tasks
            )
            transports = mcp_transports(server, self._hosts)
            async with transports.json.run(), transports.stream.run():
                ready.set_result(transports)
                await self._stopping.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    async def aclose(self) -> None:
        if self._task is not None:
            self._stopping.set()
            await self._task


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
        from ..mcp import PRINCIPAL_KEY, PROFILE_KEY  # loaded with the transports

        transports = await state.mcp_sessions.transports()
        narrowed = principal.narrowed(target)
        await transports.for_request(scope).handle_request(
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


__all__ = ["LazyMCP", "MCPEndpoint", "MCPTransports", "mcp_transports"]

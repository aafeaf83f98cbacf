"""The headers every answer gets from one pure-ASGI middleware, outermost (no per-request task, and
one `send` wrapper for both rules: issue 42):

- **Allow** names every method of a path: `OPTIONS` answers 204 with all of them (no token needed:
  it says nothing of any tenant's data), and a 405's Allow lists all of them too. (Starlette takes
  the first route whose path matches, so `/v1/credentials`, served by a GET route and a PUT route,
  used to say `Allow: GET`.)
- **`Cache-Control: no-store`** on every API answer (under `/v1/`): they carry a tenant's data and
  are never fit for a browser's or a proxy's cache. (The server's own result cache is another thing:
  a request asks to skip it with `Cache-Control: no-cache` or `"cache": false`.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.routing import BaseRoute, Match

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send


METHODS = ("DELETE", "GET", "PATCH", "POST", "PUT")
API_PREFIX = "/v1/"


def methods_of(app: ASGIApp, scope: Scope) -> list[str]:
    """Every method some route of `app` serves at the request's path, OPTIONS included, sorted.
    Each method is asked of the routes as a request would be (`BaseRoute.matches`), so routers
    included with a prefix answer for their own routes."""
    routes: list[BaseRoute] = list(getattr(getattr(app, "router", None), "routes", ()))
    found = {"OPTIONS"}
    for method in METHODS:
        probe = {**scope, "method": method}
        if any(route.matches(probe)[0] is Match.FULL for route in routes):
            found.add(method)
    return sorted(found)


class AnswerHeaders:
    def __init__(self, app: ASGIApp, routes_of: ASGIApp) -> None:
        self.app = app
        self.routes_of = routes_of
        """The FastAPI app whose routes are read (the middleware stack wraps it)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if scope["method"] == "OPTIONS" and path != "/mcp" and not path.startswith("/mcp/"):
            methods = methods_of(self.routes_of, scope)
            if len(methods) > 1:
                allow = ", ".join(methods).encode()
                await send({"type": "http.response.start", "status": 204, "headers": [(b"allow", allow)]})
                await send({"type": "http.response.body", "body": b""})
                return
        api = path.startswith(API_PREFIX)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = self._headed(message, scope, api)
            await send(message)

        await self.app(scope, receive, sending)

    def _headed(self, message: Message, scope: Scope, api: bool) -> Message:
        """The head with the Allow of a 405 and, on an API answer, `no-store` unless it says otherwise."""
        headers = list(message.get("headers", []))
        if message["status"] == 405:
            allow = ", ".join(methods_of(self.routes_of, scope)).encode()
            headers = [(k, v) for k, v in headers if k.lower() != b"allow"]
            headers.append((b"allow", allow))
        elif not api:
            return message
        if api:
            for name, _ in headers:
                if name.lower() == b"cache-control":
                    break
            else:
                headers.append((b"cache-control", b"no-store"))
        return {**message, "headers": headers}


__all__ = ["API_PREFIX", "METHODS", "AnswerHeaders", "methods_of"]

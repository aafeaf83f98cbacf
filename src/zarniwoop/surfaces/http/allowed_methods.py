"""The Allow header names every method of a path: `OPTIONS` answers 204 with all of them, and a 405's Allow
lists all of them too. (Starlette takes the first route whose path matches, so `/v1/credentials`,
served by a GET route and a PUT route, used to say `Allow: GET`.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.routing import BaseRoute, Match

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send


METHODS = ("DELETE", "GET", "PATCH", "POST", "PUT")


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


class AllowedMethods:
    """Pure ASGI, outermost: `OPTIONS` needs no token (it says nothing of any tenant's data)."""

    def __init__(self, app: ASGIApp, routes_of: ASGIApp) -> None:
        self.app = app
        self.routes_of = routes_of
        """The FastAPI app whose routes are read (the middleware stack wraps it)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS" and scope["path"] != "/mcp" and not scope["path"].startswith("/mcp/"):
            methods = methods_of(self.routes_of, scope)
            if len(methods) > 1:
                allow = ", ".join(methods).encode()
                await send({"type": "http.response.start", "status": 204, "headers": [(b"allow", allow)]})
                await send({"type": "http.response.body", "body": b""})
                return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 405:
                allow = ", ".join(methods_of(self.routes_of, scope)).encode()
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"allow"]
                message = {**message, "headers": [*headers, (b"allow", allow)]}
            await send(message)

        await self.app(scope, receive, sending)


__all__ = ["METHODS", "AllowedMethods", "methods_of"]

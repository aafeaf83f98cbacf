"""`Cache-Control: no-store` on every API answer: they carry a tenant's data and are never fit for a
browser's or a proxy's cache. (The server's own result cache is another thing: a request asks to
skip it with `Cache-Control: no-cache` or `"cache": false`.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

API_PREFIX = "/v1/"


class NoStoreApiAnswers:
    """Pure ASGI (no per-request task as `BaseHTTPMiddleware` costs): adds the header under /v1/."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(API_PREFIX):
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if not any(name.lower() == b"cache-control" for name, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, sending)

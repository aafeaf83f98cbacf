"""Dynamic client registration (`POST /register`, RFC 7591), bounded (issue 45).

Unauthenticated by design — a hosted connector registers before anyone signs in — so each request
passes, in front of the MCP SDK's handler:

1. the per-address window: `auth.registration.perAddressPerHour` (30) registrations per client
   address per hour, counted by the one admission-window engine (`limits/windows*.py`: shared by
   every worker and replica on the database or Redis) — over it a 429 with `Retry-After`;
2. the body cap: `MAX_REGISTRATION_BYTES` (413 past it, counted as read when chunked);
3. the redirect URIs: at most `MAX_REDIRECT_URIS`, each at most `MAX_REDIRECT_URI_CHARS`, each
   `https:` or `http:` on a loopback host (RFC 8252 §7.3; a private-use scheme such as
   `com.example.app:` is not taken: a browser must never be sent to `javascript:`, `data:`, `file:`
   or anything else) — else a 400 `invalid_redirect_uri` naming `redirect_uris`;
4. the unused-client cap: at most `auth.registration.maxUnusedClients` (1000) clients that never got
   a token (the retention job deletes them a day after they registered) — a 429 past it.

`redirect_uri_problem` is also what the consent step checks before it sends a browser anywhere.
Behind a reverse proxy the client address is the proxy's unless uvicorn trusts its
`X-Forwarded-For` (it does from 127.0.0.1: the README's nginx block on the same host).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ...config import keys as K
from ...contract.errors import RateLimitExceededError
from ...contract.query import SearchScope
from ...limits.windows import RateLine

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from ...runtime import Runtime

MAX_REGISTRATION_BYTES = 16 * 1024
"""A registration is a few hundred bytes; 16 KiB leaves room for a logo URI and contacts."""
MAX_REDIRECT_URIS = 10
MAX_REDIRECT_URI_CHARS = 2000
DEFAULT_PER_HOUR = 30
DEFAULT_MAX_UNUSED = 1000
WINDOW_SECONDS = 3600.0
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")


def redirect_uri_problem(uri: object) -> str | None:
    """Why `uri` may not be a redirect URI, or None when it may."""
    if not isinstance(uri, str):
        return "each redirect URI must be a string"
    if len(uri) > MAX_REDIRECT_URI_CHARS:
        return f"a redirect URI is at most {MAX_REDIRECT_URI_CHARS} characters"
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:
        return f"{uri[:80]!r} is not a URL"
    if parts.fragment or "#" in uri:
        return "a redirect URI has no fragment (RFC 6749 §3.1.2)"
    if parts.scheme == "https" and host:
        return None
    if parts.scheme == "http" and host in LOOPBACK_HOSTS:
        return None
    return (
        f"{parts.scheme or uri[:40]!r}: only https: or http: on a loopback host (127.0.0.1, [::1], localhost) "
        "is accepted (RFC 8252)"
    )


def _redirects_problem(body: bytes) -> str | None:
    try:
        metadata = json.loads(body)
    except ValueError:
        return None  # not JSON: the SDK's handler answers that
    uris = metadata.get("redirect_uris") if isinstance(metadata, dict) else None
    if not isinstance(uris, list):
        return None  # missing or malformed: the SDK's handler names it
    if len(uris) > MAX_REDIRECT_URIS:
        return f"at most {MAX_REDIRECT_URIS} redirect URIs, got {len(uris)}"
    return next((p for p in map(redirect_uri_problem, uris) if p is not None), None)


class RegistrationGate:
    """ASGI: the bounds above, then `app` (the SDK's registration endpoint) with the body re-fed."""

    def __init__(self, app: ASGIApp, rt: Runtime, unused_clients: Callable[[], Any]) -> None:
        self.app = app
        self.rt = rt
        self.unused_clients = unused_clients
        self.windows = rt.rate_windows()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        system = self.rt.settings.scoped(SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL))
        per_hour = max(1, system.get_int(K.REGISTRATIONS_PER_HOUR, DEFAULT_PER_HOUR))
        address = str((scope.get("client") or ("unknown",))[0])
        line = RateLine("registration", address, "requests", per_hour)
        try:
            await self.windows.admit(K.SYSTEM_TENANT, [line], 0, window=WINDOW_SECONDS)
        except RateLimitExceededError as exc:
            message = (
                f"at most {per_hour} client registrations per address per hour; "
                f"retry in {math.ceil(exc.retry_after)} s"
            )
            retry = {"retry-after": str(math.ceil(exc.retry_after))}
            await _refuse(send, 429, "too_many_requests", message, retry)
            return
        body = await _bounded_body(receive)
        if body is None:
            message = f"the registration body is over {MAX_REGISTRATION_BYTES} bytes"
            await _refuse(send, 413, "invalid_client_metadata", message)
            return
        problem = _redirects_problem(body)
        if problem is not None:
            await _refuse(send, 400, "invalid_redirect_uri", f"redirect_uris: {problem}")
            return
        cap = max(1, system.get_int(K.UNUSED_CLIENTS_MAX, DEFAULT_MAX_UNUSED))
        if await self.unused_clients() >= cap:
            message = f"{cap} registered clients have not signed in yet; registration is closed until they do or expire"
            await _refuse(send, 429, "temporarily_unavailable", message, {"retry-after": "3600"})
            return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _bounded_body(receive: Receive) -> bytes | None:
    """The request body, or None once it passes `MAX_REGISTRATION_BYTES` (the rest is left unread)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REGISTRATION_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _refuse(
    send: Send, status: int, error: str, description: str, headers: dict[str, str] | None = None
) -> None:
    """RFC 7591 §3.2.2's error shape; CORS open as the SDK's endpoint is (browser-based clients)."""
    payload = json.dumps({"error": error, "error_description": description}).encode()
    raw = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        (b"cache-control", b"no-store"),
        (b"access-control-allow-origin", b"*"),
        *((k.encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


__all__ = [
    "MAX_REDIRECT_URIS",
    "MAX_REDIRECT_URI_CHARS",
    "MAX_REGISTRATION_BYTES",
    "RegistrationGate",
    "redirect_uri_problem",
]

"""The web-search providers' wire APIs on the loopback emulator: serper, brave, exa, tavily, searxng.

Each `mount_*` function installs routes under a prefix (the endpoint's `baseUrl` is
`emulator.url + prefix`) that behave like the real API where it matters to a client:

- the right path and method (another method → 405);
- the key in the provider's own header (no key or a wrong key → 401 with the provider's error body);
- a missing query → 400 (422 for Brave);
- the answer body chosen from the request (Serper's vertical path, Exa's `category`, Tavily's
  `topic`, SearXNG's `categories`), served from the recorded fixtures or the synthetic ones.

    base = mount_serper(emulator, {"/search": fixture_bytes("serper", "…json")})
    settings = endpoint("serper", "serper", base, apiKey=KEYS["serper"])
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from .emulator import Emulator, RecordedRequest, Reply
from .paths import TESTS, fixture_bytes, optional_fixture_bytes

KEYS: dict[str, str] = {
    "serper": "serper-test-key-1234",
    "brave": "BSA-brave-test-key-5678",
    "exa": "exa-test-key-9012",
    "tavily": "tvly-test-key-3456",
}
"""The keys each emulated provider accepts; anything else is refused with 401."""

SYNTHETIC = TESTS / "fixtures"

Body = bytes | Callable[[RecordedRequest], bytes]
"""A recorded body, or one chosen from the request (a page of a paged search: `pageno`, `offset`)."""
Bodies = Mapping[str, Body]
"""Answer bodies by selector: vertical path (serper, brave), category (exa, searxng), topic (tavily)."""


def served(body: Body, request: RecordedRequest) -> bytes:
    """The bytes of `body` for `request`."""
    return body(request) if callable(body) else body


def synthetic_bytes(*parts: str) -> bytes:
    return Path(SYNTHETIC, *parts).read_bytes()


def _json(data: object, status: int = 200) -> Reply:
    return Reply.json(data, status=status)


def _route(
    method: str,
    check: Callable[[RecordedRequest], Reply | None],
    answer: Callable[[RecordedRequest], Reply],
) -> Callable[[RecordedRequest], Reply]:
    def handle(request: RecordedRequest) -> Reply:
        if request.method != method:
            return _json({"error": f"method {request.method} not allowed; use {method}"}, 405)
        refused = check(request)
        return refused if refused is not None else answer(request)

    return handle


def _json_body(request: RecordedRequest) -> object:
    try:
        return request.json()
    except ValueError:
        return None


def mount_serper(
    emulator: Emulator, bodies: Bodies, *, prefix: str = "/serper", key: str = KEYS["serper"]
) -> str:
    """`POST /{search,images,videos,news,scholar}` with `X-API-KEY`; bodies keyed by path."""

    def check(request: RecordedRequest) -> Reply | None:
        if request.header("x-api-key") != key:
            return _json({"message": "Unauthorized.", "statusCode": 401}, 401)
        body = _json_body(request)
        queries = body if isinstance(body, list) else [body]
        if not all(isinstance(q, dict) and q.get("q") for q in queries):
            return _json({"message": "Missing query parameter 'q'", "statusCode": 400}, 400)
        return None

    for path, body in bodies.items():
        emulator.add(prefix + path, _route("POST", check, lambda _r, b=body: Reply.json(b)))
    return emulator.url + prefix


def mount_brave(
    emulator: Emulator, bodies: Bodies, *, prefix: str = "/brave", key: str = KEYS["brave"]
) -> str:
    """`GET /res/v1/{web,images,videos,news}/search` with `X-Subscription-Token`; bodies keyed by path."""

    def check(request: RecordedRequest) -> Reply | None:
        if request.header("x-subscription-token") != key:
            return _json(
                {
                    "type": "ErrorResponse",
                    "error": {
                        "code": "SUBSCRIPTION_TOKEN_INVALID",
                        "detail": "The provided subscription token is invalid.",
                        "status": 401,
                    },
                },
                401,
            )
        if not request.param("q"):
            return _json(
                {
                    "type": "ErrorResponse",
                    "error": {"code": "VALIDATION", "detail": "q is required", "status": 422},
                },
                422,
            )
        return None

    for path, body in bodies.items():
        emulator.add(
            prefix + path,
            _route(
                "GET",
                check,
                lambda r, b=body: Reply.json(
                    served(b, r),
                    headers={
                        "X-RateLimit-Limit": "1, 15000",
                        "X-RateLimit-Remaining": "1, 14000",
                        "X-RateLimit-Reset": "1, 1419704",
                    },
                ),
            ),
        )
    return emulator.url + prefix


def mount_exa(emulator: Emulator, bodies: Bodies, *, prefix: str = "/exa", key: str = KEYS["exa"]) -> str:
    """`POST /search` with `x-api-key`; bodies keyed by the request's `category` ("" = none)."""

    def check(request: RecordedRequest) -> Reply | None:
        if request.header("x-api-key") != key:
            return _json({"requestId": "emulated", "error": "Invalid API key"}, 401)
        body = _json_body(request)
        if not isinstance(body, dict) or not body.get("query"):
            return _json({"requestId": "emulated", "error": "query is required"}, 400)
        return None

    def answer(request: RecordedRequest) -> Reply:
        category = str(_json_body(request).get("category") or "")  # type: ignore[union-attr]
        body = bodies.get(category, bodies.get(""))
        return Reply.json(body) if body is not None else _json({"requestId": "emulated", "results": []})

    emulator.add(prefix + "/search", _route("POST", check, answer))
    return emulator.url + prefix


def mount_tavily(
    emulator: Emulator, bodies: Bodies, *, prefix: str = "/tavily", key: str = KEYS["tavily"]
) -> str:
    """`POST /search` with `Authorization: Bearer` (or the older `api_key` body field); bodies keyed by topic."""

    def check(request: RecordedRequest) -> Reply | None:
        body = _json_body(request)
        body_key = body.get("api_key") if isinstance(body, dict) else None
        if request.header("authorization") != f"Bearer {key}" and body_key != key:
            return _json({"detail": {"error": "Unauthorized: missing or invalid API key."}}, 401)
        if not isinstance(body, dict) or not body.get("query"):
            return _json({"detail": {"error": "Query is missing."}}, 400)
        return None

    def answer(request: RecordedRequest) -> Reply:
        topic = str(_json_body(request).get("topic") or "general")  # type: ignore[union-attr]
        body = bodies.get(topic, bodies.get("general"))
        return Reply.json(body) if body is not None else _json({"query": "", "results": []})

    emulator.add(prefix + "/search", _route("POST", check, answer))
    return emulator.url + prefix


def mount_searxng(
    emulator: Emulator, bodies: Bodies, *, prefix: str = "/searxng", json_enabled: bool = True
) -> str:
    """`GET /search`: no key; `format=json` must be asked for (and enabled) else the recorded 403 HTML page."""

    # Read here, in the test's thread: a missing ../shared skips the test (it cannot from the emulator's).
    forbidden = (
        fixture_bytes("searxng", "error-403-json-format-not-enabled.html")
        if not json_enabled
        else optional_fixture_bytes("searxng", "error-403-json-format-not-enabled.html")
    ) or b"<html><body>403 Forbidden</body></html>"
    no_query = optional_fixture_bytes("searxng", "error-400-no-query.json") or b'{"error": "no query"}'

    def check(request: RecordedRequest) -> Reply | None:
        if request.param("format") != "json" or not json_enabled:
            return Reply(status=403, body=forbidden, headers={"Content-Type": "text/html; charset=utf-8"})
        if not request.param("q"):
            return Reply.json(no_query, status=400)
        return None

    def answer(request: RecordedRequest) -> Reply:
        category = request.param("categories") or "general"
        body = bodies.get(category, bodies.get("general"))
        return (
            Reply.json(served(body, request))
            if body is not None
            else Reply.json(json.dumps({"query": "", "results": []}).encode())
        )

    emulator.add(prefix + "/search", _route("GET", check, answer))
    return emulator.url + prefix

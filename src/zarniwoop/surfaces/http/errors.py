"""One place that turns every failure into a JSON answer: `{"error": {"field"?, "message"}}`.

UnknownNameError (a profile not defined)   → 404, naming the field
InvalidRequestError, body/query validation → 422, naming the field
AccessDeniedError                          → 403
QuotaExceededError                         → 429
ConfigError                                → 400, naming the key
NoProviderAvailableError, ProviderError    → 424 (every provider failed)
any other ZarniwoopError                   → 400
HTTPException (401, 404, 405, …)           → its status, same JSON shape
anything else                              → 500 "internal error", logged here, no traceback sent

On the OpenAI-compatible gateway's paths (`openai_wire.GATEWAY_PATHS`) the same answers come in
OpenAI's shape `{"error": {"message", "type", "param", "code"}}`, the one its clients parse; on
`/v1/messages` in Anthropic's `{"type": "error", "error": {"type", "message"}}`.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from ...contract.errors import (
    AccessDeniedError,
    ConfigError,
    InvalidRequestError,
    NoProviderAvailableError,
    ProviderError,
    QuotaExceededError,
    UnknownNameError,
    ZarniwoopError,
)
from ...tools.schema import to_invalid_request
from .anthropic_answers import error_json as anthropic_error
from .anthropic_wire import MESSAGES_PATHS
from .openai_wire import GATEWAY_PATHS, error_json

log = logging.getLogger(__name__)


class ErrorDetail(BaseModel):
    field: str | None = None
    message: str


class ErrorBody(BaseModel):
    """The one error shape of the HTTP API (documented in OpenAPI for every status below)."""

    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Malformed body or configuration problem"},
    401: {"model": ErrorBody, "description": "Missing or invalid bearer token"},
    403: {"model": ErrorBody, "description": "The token may not act on this scope or resource"},
    404: {"model": ErrorBody, "description": "No such resource"},
    422: {"model": ErrorBody, "description": "Invalid input; `field` names it"},
    424: {"model": ErrorBody, "description": "Every provider failed"},
    429: {"model": ErrorBody, "description": "A quota is exhausted"},
}
"""`responses=` for the API routers: OpenAPI then documents every status the handlers can answer."""

_STATUS: tuple[tuple[type[ZarniwoopError], int], ...] = (
    (UnknownNameError, 404),
    (InvalidRequestError, 422),
    (AccessDeniedError, 403),
    (QuotaExceededError, 429),
    (ConfigError, 400),
    (NoProviderAvailableError, 424),
    (ProviderError, 424),
)


def error_body(message: str, field: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"message": message}
    if field:
        error = {"field": field, **error}
    return {"error": error}


def status_of(exc: ZarniwoopError) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 400


def _answer(
    request: Request, message: str, field: str | None, status: int, headers: Any = None
) -> JSONResponse:
    if request.url.path.startswith(MESSAGES_PATHS):
        return JSONResponse(anthropic_error(status, message, field), status_code=status, headers=headers)
    if request.url.path.startswith(GATEWAY_PATHS):
        kind = "server_error" if status >= 500 else "invalid_request_error"
        return JSONResponse(error_json(message, kind, field), status_code=status, headers=headers)
    return JSONResponse(error_body(message, field), status_code=status, headers=headers)


async def _zarniwoop_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ZarniwoopError)
    field = getattr(exc, "field", None) or getattr(exc, "key", None)
    return _answer(request, exc.message, field, status_of(exc))


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    invalid = to_invalid_request(
        exc.errors(), _body_model(request), strip=("body", "query", "path", "header")
    )
    return _answer(request, invalid.message, invalid.field, 422)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return _answer(request, str(exc.detail), None, exc.status_code, exc.headers)


async def _client_gone(request: Request, exc: Exception) -> JSONResponse:
    """The client hung up before its body was read: its own doing, not a server error — one
    debug line, no traceback (the answer goes nowhere; 400 keeps access logs honest)."""
    log.debug("client disconnected during %s %s", request.method, request.url.path)
    return JSONResponse(error_body("client disconnected before the body was read"), status_code=400)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error in %s %s", request.method, request.url.path)
    return _answer(request, "internal error; the server log has the details", None, 500)


def _body_model(request: Request) -> Any:
    """The route's body model, to list its parameters when an unknown one was sent."""
    field = getattr(request.scope.get("route"), "body_field", None)
    annotation = getattr(getattr(field, "field_info", None), "annotation", None)
    return annotation if isinstance(annotation, type) and hasattr(annotation, "model_fields") else None


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ZarniwoopError, _zarniwoop_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    app.add_exception_handler(Exception, _unexpected)


__all__ = ["error_body", "install_error_handlers", "status_of"]

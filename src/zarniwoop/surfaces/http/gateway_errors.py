"""How the gateway's routes answer a failure: OpenAI's error shape and status for anything a gateway
call can raise (`error_parts`; `/v1/messages` rewraps it in Anthropic's shape), and the OpenAPI
error answers and request bodies the routes declare.

A token without an account is refused (403 `account_required`): budgets and usage are per account,
and silently charging a project's "default" account would hide who spent them. Errors use OpenAI's
shape `{"error": {"message", "type", "param", "code"}}` (the rest of the API keeps its own):

    unknown model spec                 404 model_not_found          (param: model)
    bad body                           400 invalid_request_error    (param: the field)
    no key for the model's provider    400 missing_credential       (param: model)
    a budget exhausted                 429 insufficient_quota       (level: account|project|team|tenant; x-should-retry: false)
    a per-minute limit                 429 rate_limit_exceeded      + Retry-After (seconds, rounded up)
    a model id its wire does not admit 422 invalid_value            (param: model; x-should-retry: false)
    every upstream failed              502 upstream_error
    token without account / no scope   403 account_required / permission_denied

"""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException

from ...contract.errors import (
    AccessDeniedError,
    BudgetUnavailableError,
    ConfigError,
    InvalidRequestError,
    MissingCredentialError,
    NoProviderAvailableError,
    ProviderError,
    QuotaExceededError,
    RateLimitExceededError,
    UnknownModelError,
    UnsafeValueError,
    ZarniwoopError,
)
from .gateway_caller import ACCOUNT_REQUIRED
from .openai_wire import COMPONENT_REF, OpenAIErrorBody, error_json

log = logging.getLogger("zarniwoop.gateway")


def error_answers(body: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI error answers of a gateway route whose errors come in `body`'s shape."""
    return {status: {"model": body} for status in (400, 401, 403, 404, 422, 429, 502)}


def request_body(schema: str) -> dict[str, Any]:
    """A gateway route's OpenAPI `requestBody`: JSON of the named component schema (its own
    validation runs in the route, past FastAPI's, so the document names it here)."""
    content = {"application/json": {"schema": {"$ref": COMPONENT_REF + schema}}}
    return {"requestBody": {"required": True, "content": content}}


OPENAI_ERRORS = error_answers(OpenAIErrorBody)
"""The error answers of the OpenAI-shaped routes (`/v1/chat/completions`, `/v1/responses`, `/v1/embeddings`)."""

NO_RETRY = {"x-should-retry": "false"}
"""On answers a retry cannot change (a spent budget, a refused permission, an unsupported endpoint):
the openai SDK honours it instead of retrying a 429 or 5xx with backoff."""


def error_response(exc: BaseException) -> JSONResponse:
    status, payload, headers = error_parts(exc)
    return JSONResponse(payload, status_code=status, headers=headers)


def error_parts(exc: BaseException) -> tuple[int, dict[str, Any], dict[str, str]]:
    """OpenAI's error shape and status for anything a gateway call can raise."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
        param = ".".join(str(p) for p in first.get("loc", ()) if not isinstance(p, int)) or None
        message = f"{param}: {first.get('msg')}" if param else str(first.get("msg"))
        return 400, error_json(message, "invalid_request_error", param, "invalid_value"), {}
    if isinstance(exc, RateLimitExceededError):
        body = error_json(exc.message, "requests", None, "rate_limit_exceeded", level=exc.level)
        return 429, body, {"Retry-After": str(max(1, math.ceil(exc.retry_after)))}
    if isinstance(exc, QuotaExceededError):
        # a spent budget stays spent; only an unreachable budget store may pass on a later try
        retry = {} if isinstance(exc, BudgetUnavailableError) else dict(NO_RETRY)
        return (
            429,
            error_json(exc.message, "insufficient_quota", None, "insufficient_quota", level=exc.level),
            retry,
        )
    if isinstance(exc, UnknownModelError):
        return 404, error_json(exc.message, "invalid_request_error", "model", "model_not_found"), {}
    if isinstance(exc, MissingCredentialError):
        return 400, error_json(exc.message, "invalid_request_error", "model", "missing_credential"), {}
    if isinstance(exc, UnsafeValueError):
        return (
            422,
            error_json(exc.message, "invalid_request_error", exc.field, "invalid_value"),
            dict(NO_RETRY),
        )
    if isinstance(exc, InvalidRequestError):
        return 400, error_json(exc.message, "invalid_request_error", exc.field, "invalid_value"), {}
    if isinstance(exc, AccessDeniedError):
        code = "account_required" if exc.message == ACCOUNT_REQUIRED else "permission_denied"
        return 403, error_json(exc.message, "permission_error", None, code), dict(NO_RETRY)
    if isinstance(exc, (NoProviderAvailableError, ProviderError)):
        return 502, error_json(exc.message, "upstream_error", None, "upstream_failed"), {}
    if isinstance(exc, ConfigError):
        return 400, error_json(exc.message, "invalid_request_error", None, "config_error"), {}
    if isinstance(exc, ZarniwoopError):
        return 400, error_json(exc.message, "invalid_request_error", None, None), {}
    if isinstance(exc, HTTPException):
        return (
            exc.status_code,
            # as the guard's 401
            error_json(
                str(exc.detail),
                "invalid_request_error",
                None,
                "invalid_api_key" if exc.status_code == 401 else None,
            ),
            dict(exc.headers or {}),
        )
    log.exception("gateway call failed unexpectedly")
    return 500, error_json("internal error; the server log has the details", "server_error", None, None), {}


__all__ = ["NO_RETRY", "OPENAI_ERRORS", "error_answers", "error_parts", "error_response", "request_body"]

"""The OpenAI-compatible gateway: `POST /v1/chat/completions`, `GET /v1/models` (and the helpers the
gateway's other routes share: `routes/messages.py`, `routes/embeddings.py`).

Point any OpenAI SDK at `http://host:port/v1` with a token bound to an account
(`zarniwoop tokens create --account mike`): every call runs the whole seed 002 path under that
token's tenant, project and account — alias resolution, credential cascade, budgets reserved and
settled at every level, per-minute limits, thresholds, failover and `fallback_models`, sanitizer
and parsers, the usage record with `credential_source` — through `LlmManager.chat` / `.stream`,
and answers in OpenAI's wire shape whatever wire served it (Anthropic, Gemini, Ollama, OpenAI).

    client = openai.OpenAI(base_url="http://127.0.0.1:8765/v1", api_key="zw_…")
    client.chat.completions.create(model="default:analyze", messages=[{"role": "user", "content": "hi"}])

`GET /v1/models` lists what can answer: models whose instance has a key and, for a local server
(Ollama, LM Studio, a keyless vLLM), a recent successful probe of it (`llm/catalog/liveness.py`) — each entry
names its `instance`; `?all=true` adds the rest with `available: false` and the reason.

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

The body is read only after the request guard checked the token (`guard.py`), and it is parsed
here with the wire models of `openai_wire.py`, so a validation error is OpenAI-shaped too.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException

from ....contract.errors import (
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
from ....llm.adapters import StreamDelta
from ....llm.adapters.options import passed_back
from ....llm.call import LlmResult
from ....llm.catalog.liveness import partition
from ....llm.catalog.usable import UsableModel, usable_models
from ..answering import streamed, unless_gone
from ..deps import Ctx, CurrentPrincipal
from ..fast_body import FastBodyRoute, request_only
from ..fast_json import FastJSONResponse
from ..gateway_caller import ACCOUNT_REQUIRED, caller_of, gateway_call
from ..openai_wire import (
    COMPONENT_REF,
    DONE,
    ChatCompletionRequest,
    OpenAIErrorBody,
    chunk,
    completion,
    error_json,
    finish_reason,
    model_entry,
    response_extras,
    served_json,
    sse,
)
from ..state import AppState

if TYPE_CHECKING:
    pass

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
router = APIRouter(tags=["gateway"], responses=OPENAI_ERRORS, route_class=FastBodyRoute)


NO_RETRY = {"x-should-retry": "false"}
"""On answers a retry cannot change (a spent budget, a refused permission, an unsupported endpoint):
the openai SDK honours it instead of retrying a 429 or 5xx with backoff."""


@router.post(
    "/v1/chat/completions",
    summary="OpenAI-compatible chat completion under the token's account (stream: SSE chunks)",
    openapi_extra=request_body("ChatCompletionRequest"),
)
@request_only
async def chat_completions(request: Request) -> Response:
    # State and principal read here, not through `Ctx`/`CurrentPrincipal`: each dependency costs
    # FastAPI a resolution pass per call (a twentieth of a gateway call's CPU), as in `get_caller`.
    state: AppState = request.app.state.zarniwoop
    caller = await caller_of(request, state)  # a 401 raised here, outside the OpenAI-shaped answers
    try:
        who = caller.call()  # before the body is parsed: no account, no work
        body = _parse(await request.body())
        call = replace(
            who, model=body.model, fallback_models=tuple(body.fallback_models), session_id=body.user
        )
        manager = await state.runtime.llm()
        chat_request = body.to_chat_request()
        completion_id, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        if body.stream:
            return await streamed(
                manager,
                call,
                chat_request,
                lambda items, first: _events(items, first, body, completion_id, created),
            )
        result = await unless_gone(request, manager, call, chat_request)
        if result is None:  # nobody to answer: the call is settled on its own (`llm/settlement.py`)
            return Response(status_code=499)
        return FastJSONResponse(completion(result, _served(result), completion_id, created))
    except Exception as exc:
        return error_response(await caller.failure(state, exc))


async def _events(
    items: AsyncIterator[StreamDelta | LlmResult],
    first: StreamDelta | LlmResult,
    body: ChatCompletionRequest,
    completion_id: str,
    created: int,
) -> AsyncIterator[bytes]:
    """OpenAI's chunk stream: a role chunk, text deltas as they arrive, the tool calls and the finish
    reason from the (sanitised) final result, the usage chunk when asked for, then `[DONE]`."""
    model = body.model
    yield chunk(completion_id, created, model, {"role": "assistant", "content": ""})
    streamed_text = False
    try:
        item = first
        while isinstance(item, StreamDelta):
            if item.kind == "text" and item.text:
                streamed_text = True
                yield chunk(completion_id, created, model, {"content": item.text})
            elif item.kind == "reasoning" and item.text:
                yield chunk(completion_id, created, model, {"reasoning_content": item.text})
            item = await items.__anext__()
        result, served = item, _served(item)
        response = result.response
        if response.text and not streamed_text:  # nothing came as deltas (or only markup): say it once
            yield chunk(completion_id, created, served, {"content": response.text})
        if response.tool_calls:
            calls = [
                {
                    "index": i,
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for i, c in enumerate(response.tool_calls)
            ]
            yield chunk(completion_id, created, served, {"tool_calls": calls})
        refusal, logprobs, fingerprint = response_extras(response)
        if refusal:
            yield chunk(completion_id, created, served, {"refusal": refusal})
        answer_extras, message_extras = passed_back(response)
        if message_extras:  # `annotations`, … as the upstream sent them, once
            yield chunk(completion_id, created, served, message_extras)
        extra = {**answer_extras, "system_fingerprint": fingerprint, "zarniwoop": served_json(result)}
        finish = finish_reason(response)
        yield chunk(completion_id, created, served, {}, finish=finish, extra=extra, logprobs=logprobs)
        if body.include_usage:
            yield chunk(completion_id, created, served, None, usage=result.usage, metadata=response.metadata)
        yield DONE
    except Exception as exc:  # mid-stream: the status is sent already, so the error is an event
        status, payload, _ = error_parts(exc)
        log.warning("gateway stream failed after it started (%s): %s", status, payload["error"]["message"])
        yield sse(payload)
    finally:
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()  # a client that went away abandons the call: it is settled on its own


@router.get(
    "/v1/models",
    summary="The aliases and catalog models this token's account may use, and that can answer now",
)
async def list_models(
    ctx: Ctx,
    principal: CurrentPrincipal,
    show_all: bool = Query(
        False,
        alias="all",
        description="Also list what cannot answer now (a local server down, a model it does not serve), "
        "each with `available: false` and the reason.",
    ),
) -> Response:
    try:
        call = gateway_call(principal)
        manager = await ctx.runtime.llm()
        models = await usable_models(manager, await ctx.runtime.catalog(), call)
        shown, hidden = await partition(manager, models, call, ctx.local_probes)
    except Exception as exc:
        return error_response(exc)
    data = [_model_json(m, available=True) for m in shown]
    if show_all:
        data += [_model_json(h.model, available=False, reason=h.reason) for h in hidden]
    return JSONResponse({"object": "list", "data": data})


def _model_json(model: UsableModel, **extra: Any) -> dict[str, Any]:
    return model_entry(
        model.id,
        model.owned_by,
        instance=model.owned_by,
        target=model.target,
        credential_source=model.credential_source,
        **extra,
    )


# -- helpers ----------------------------------------------------------------------------------


def _parse(raw: bytes) -> ChatCompletionRequest:
    if not raw.strip():
        raise InvalidRequestError("body", "expected a JSON chat completion request")
    return ChatCompletionRequest.model_validate_json(raw)


def _served(result: LlmResult) -> str:
    """What served, as a spec one could send back: `<instance>:<model>`."""
    return f"{result.instance}:{result.model}"


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


__all__ = [
    "OPENAI_ERRORS",
    "error_answers",
    "error_parts",
    "error_response",
    "request_body",
    "router",
]

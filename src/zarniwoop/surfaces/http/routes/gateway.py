"""The OpenAI-compatible gateway: `POST /v1/chat/completions`, `GET /v1/models` (every gateway route
runs in `gateway_caller.gateway_route`'s frame and answers failures as `gateway_errors.py` maps them).

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

A token without an account is refused (403 `account_required`); errors are OpenAI-shaped
(`gateway_errors.py` has the table).

The body is read only after the request guard checked the token (`guard.py`), and it is parsed
here with the wire models of `openai_wire.py`, so a validation error is OpenAI-shaped too.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from ....contract.errors import InvalidRequestError
from ....llm.adapters import StreamDelta
from ....llm.adapters.options import passed_back
from ....llm.call import LlmCall, LlmResult
from ....llm.catalog.liveness import partition
from ....llm.catalog.usable import UsableModel, usable_models
from ..answering import streamed, unless_gone
from ..deps import Ctx, CurrentPrincipal
from ..fast_body import FastBodyRoute
from ..fast_json import FastJSONResponse
from ..gateway_caller import gateway_call, gateway_route
from ..gateway_errors import OPENAI_ERRORS, error_parts, error_response, request_body
from ..openai_wire import (
    DONE,
    ChatCompletionRequest,
    chunk,
    completion,
    finish_reason,
    model_entry,
    response_extras,
    served_json,
    sse,
)
from ..state import AppState

log = logging.getLogger("zarniwoop.gateway")
router = APIRouter(tags=["gateway"], responses=OPENAI_ERRORS, route_class=FastBodyRoute)


@router.post(
    "/v1/chat/completions",
    summary="OpenAI-compatible chat completion under the token's account (stream: SSE chunks)",
    openapi_extra=request_body("ChatCompletionRequest"),
)
@gateway_route(error_response)
async def chat_completions(request: Request, state: AppState, who: LlmCall) -> Response:
    body = _parse(await request.body())
    call = replace(who, model=body.model, fallback_models=tuple(body.fallback_models), session_id=body.user)
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
    return FastJSONResponse(completion(result, _served(result), completion_id, created))


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


__all__ = ["router"]

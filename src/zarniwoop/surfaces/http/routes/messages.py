"""Anthropic's Messages API on the gateway: `POST /v1/messages`, `POST /v1/messages/count_tokens`.

Point the anthropic SDK (or Claude Code) at the gateway with a token bound to an account:

    client = anthropic.Anthropic(base_url="http://127.0.0.1:8765", api_key="zw_…")   # sent as x-api-key
    client.messages.create(model="anthropic:claude-sonnet-4-5", max_tokens=1024,
                           messages=[{"role": "user", "content": "hi"}])

The token comes as `x-api-key` or `Authorization: Bearer`; `anthropic-version` is checked and
forwarded (`anthropic_wire.check_version`). The call runs the gateway's one path — alias resolution,
credential cascade, budgets reserved and settled at every level, failover — through
`LlmManager.chat` / `.stream`, exactly as `/v1/chat/completions` does (`routes/gateway.py`; the
error mapping is `gateway_errors.py`'s; the caller, its account check, its remembered token's
revocation and the route's frame are `gateway_caller.py`'s, the disconnect handling
`answering.py`'s). An Anthropic-wire instance is sent the client's body as it came and its answer
comes back as it came (`anthropic_answers.py`); any other wire gets the mapping of
`anthropic_wire.py`, and a field it cannot carry is a 400 naming it. Errors are Anthropic's shape `{"type": "error", "error": {"type", "message"}}`.

`count_tokens` answers `{"input_tokens": N}`: the input estimate the gateway holds and, when the
upstream reports no usage, charges (`ChatRequest.estimated_input_tokens`) — not the upstream's count.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ....llm.adapters import StreamDelta
from ....llm.call import LlmCall, LlmResult
from ..answering import streamed, unless_gone
from ..anthropic_answers import MessageEvents, error_json, event, message_json
from ..anthropic_wire import (
    AnthropicErrorBody,
    CountTokensRequest,
    CountTokensResponse,
    MessagesRequest,
    authorization,
    check_version,
    parse_body,
    to_chat_request,
)
from ..fast_body import FastBodyRoute
from ..fast_json import FastJSONResponse
from ..gateway_caller import gateway_route
from ..gateway_errors import error_answers, error_parts, request_body
from ..state import AppState

log = logging.getLogger("zarniwoop.gateway")

router = APIRouter(tags=["gateway"], responses=error_answers(AnthropicErrorBody), route_class=FastBodyRoute)


def _header(request: Request) -> str | None:
    """The token as `Authorization: Bearer` or `x-api-key` sent it (used where the guard left none)."""
    return authorization(request.headers.get("authorization"), request.headers.get("x-api-key"))


def _error(exc: BaseException) -> tuple[int, dict[str, Any]]:
    status, payload, _ = error_parts(exc)
    detail = payload["error"]
    return status, error_json(status, detail["message"], detail.get("param"))


def error_response(exc: BaseException) -> Response:
    """Anthropic's error shape for anything the gateway's mapping answers (`gateway_errors.error_parts`)."""
    status, payload, headers = error_parts(exc)
    detail = payload["error"]
    return FastJSONResponse(
        error_json(status, detail["message"], detail.get("param")), status_code=status, headers=headers
    )


@router.post(
    "/v1/messages",
    summary="Anthropic Messages API under the token's account (stream: Anthropic's SSE events)",
    openapi_extra=request_body("MessagesRequest"),
)
@gateway_route(error_response, _header)
async def messages(request: Request, state: AppState, who: LlmCall) -> Response:
    forwarded = check_version(request.headers)
    parsed, body = parse_body(await request.body(), MessagesRequest)
    assert isinstance(parsed, MessagesRequest)
    chat_request = to_chat_request(parsed, body, forwarded)
    metadata = parsed.metadata
    call = replace(who, model=parsed.model, session_id=metadata.user_id if metadata else None)
    manager = await state.runtime.llm()
    message_id = f"msg_{uuid.uuid4().hex[:24]}"
    if parsed.stream:
        events = MessageEvents(message_id, parsed.model, chat_request.estimated_input_tokens())
        return await streamed(manager, call, chat_request, lambda items, first: _events(items, first, events))
    result = await unless_gone(request, manager, call, chat_request)
    return FastJSONResponse(message_json(result, message_id, parsed.model))


@router.post(
    "/v1/messages/count_tokens",
    summary="The input tokens the gateway estimates (and holds) for a Messages API request",
    response_model=CountTokensResponse,
    openapi_extra=request_body("CountTokensRequest"),
)
@gateway_route(error_response, _header)
async def count_tokens(request: Request, state: AppState, who: LlmCall) -> Response:
    check_version(request.headers)
    parsed, body = parse_body(await request.body(), CountTokensRequest)
    estimate = to_chat_request(parsed, body).estimated_input_tokens()
    return FastJSONResponse({"input_tokens": estimate})


async def _events(
    items: AsyncIterator[StreamDelta | LlmResult], first: StreamDelta | LlmResult, events: MessageEvents
) -> AsyncIterator[bytes]:
    streamed_text = False
    try:
        item = first
        while isinstance(item, StreamDelta):
            streamed_text = streamed_text or (item.kind == "text" and bool(item.text))
            for piece in events.delta(item):
                yield piece
            item = await items.__anext__()
        for piece in events.finish(item, streamed_text):
            yield piece
    except Exception as exc:  # mid-stream: the status is sent already, so the error is an event
        status, payload = _error(exc)
        log.warning("messages stream failed after it started (%s): %s", status, payload["error"]["message"])
        yield event("error", payload)
    finally:
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()  # a client that went away abandons the call: it is settled on its own


__all__ = ["error_response", "router"]

"""`POST /v1/responses`: OpenAI's Responses API under the token's account.

The same call as `/v1/chat/completions` (`gateway.py`) — one `LlmManager.chat` / `.stream`, so the
same budgets, settlement, failover and usage record — with the Responses shape at both ends: native
to an OpenAI-wire instance that serves `/responses` (the body forwarded as the client wrote it),
bridged through every other wire by the mapping table of `responses_wire.py`.

    client = openai.OpenAI(base_url="http://127.0.0.1:8765/v1", api_key="zw_…")
    first = client.responses.create(model="openai:gpt-4o-mini", input="hi", tools=[...])
    client.responses.create(model="anthropic:claude-sonnet-4-5", previous_response_id=first.id,
                            input=[{"type": "function_call_output", "call_id": "…", "output": "42"}])

`store` (default true) keeps the conversation for `previous_response_id`, and the response object as
it was answered for `GET /v1/responses/{response_id}` (`client.responses.retrieve(id)`), until
`DELETE` (`client.responses.delete(id)`) or `ai.responses.retentionDays` — sealed, the account's
alone (`storage/responses.py`): any other caller's retrieve or delete is the 404 of an id that never
existed, and a deleted id continues nothing (`previous_response_id`: the 400 of an unknown one).
A `response_id` not of the shape `resp_<32 hex>` is a 400 naming it, as is any query parameter
(retrieve's `stream`, `starting_after`, `include`: the stored object is all there is). Where the operator set
`ai.responses.store: false`, `store: true` and `previous_response_id` are a 400 naming them. Errors are
OpenAI-shaped as on the rest of the gateway; an error after the stream began is `response.failed`.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from ....contract.errors import InvalidRequestError
from ....contract.query import SearchScope
from ....llm.adapters import StreamDelta
from ....llm.call import LlmCall, LlmResult
from ....storage.responses import STORE_KEY, ResponseStore
from ....tenancy.tokens import Principal
from ..answering import streamed, unless_gone
from ..deps import Ctx, CurrentPrincipal
from ..fast_body import FastBodyRoute
from ..fast_json import FastJSONResponse
from ..gateway_caller import gateway_call, gateway_route
from ..gateway_errors import OPENAI_ERRORS, error_parts, error_response, request_body
from ..openai_wire import COMPONENT_REF
from ..responses_answer import ResponseEvents, new_id, output_items, response_json
from ..responses_wire import ResponsesRequest, to_chat_request
from ..state import AppState

log = logging.getLogger("zarniwoop.gateway")

router = APIRouter(tags=["gateway"], responses=OPENAI_ERRORS, route_class=FastBodyRoute)

RESPONSE_ID = re.compile(r"resp_[0-9a-f]{32}")
"""The shape of the ids this route issues (`new_id("resp")`)."""
RESPONSE_ID_PATH = Path(
    description="A response's id, as `POST /v1/responses` answered it.",
    json_schema_extra={"pattern": f"^{RESPONSE_ID.pattern}$"},
)


def _answer_200(schema: str, *types: str) -> dict[str, Any]:
    """The OpenAPI `200` of a route answering the named component schema (and other media `types`)."""
    content = {"application/json": {"schema": {"$ref": COMPONENT_REF + schema}}}
    content.update({media: {"schema": {"type": "string"}} for media in types})
    return {"responses": {"200": {"content": content}}}


@router.post(
    "/v1/responses",
    summary="OpenAI Responses API under the token's account (stream: typed SSE events)",
    openapi_extra={
        **request_body("ResponsesRequest"),
        **_answer_200("ResponsesAnswer", "text/event-stream"),
    },
)
@gateway_route(error_response)
async def create_response(request: Request, state: AppState, who: LlmCall) -> Response:
    raw, body = _parse(await request.body())
    runtime = state.runtime
    await runtime.settings.refresh(max_age=1.0)
    storing = runtime.settings.scoped(SearchScope(who.tenant, who.project)).get_bool(STORE_KEY, True)
    for name, asked in (
        ("store", body.store is True),
        ("previous_response_id", body.previous_response_id),
    ):
        if asked and not storing:
            raise InvalidRequestError(name, "the operator turned response storage off (ai.responses.store)")
    store = ResponseStore(runtime.db, runtime.box)
    items = await _history(store, who, body) + body.input_items()
    chat_request = to_chat_request(body, raw, items, history=body.previous_response_id is not None)
    call = replace(who, model=body.model, session_id=body.user)
    keep = Keeper(store, who, items) if storing and body.store is not False else None
    manager = await runtime.llm()
    response_id, created = new_id("resp"), int(time.time())
    if body.stream:
        events = ResponseEvents(response_id, created, body, keep is not None)
        return await streamed(
            manager, call, chat_request, lambda upstream, first: _events(upstream, first, events, keep)
        )
    result = await unless_gone(request, manager, call, chat_request)
    output = output_items(result.response, new_id("msg"))
    answer = response_json(
        response_id,
        created,
        body,
        status="completed",
        stored=keep is not None,
        result=result,
        output=output,
    )
    if keep is not None:
        await keep.save(answer)
    return FastJSONResponse(answer)


STORED_QUERY = {
    "stream": "the gateway keeps no event stream of a stored response: retrieve it whole",
    "starting_after": "the gateway keeps no event stream of a stored response: retrieve it whole",
    "include": "the stored response is the object as it was answered: there is nothing more to include",
    "include_obfuscation": "the gateway keeps no event stream of a stored response, so nothing to obfuscate",
}
"""The query parameters OpenAI's retrieve takes (`client.responses.retrieve(id, stream=True, …)`):
each is a 400 naming it, as is any other — a parameter is honoured or refused, never dropped."""


def _stored_route(method: str, summary: str, schema: str) -> Callable[[Any], Any]:
    """The route of one method on a stored response, answering the named component schema."""
    return router.api_route(
        "/v1/responses/{response_id}", methods=[method], summary=summary, openapi_extra=_answer_200(schema)
    )


@_stored_route(
    "GET", "A stored response of the token's account, the object as it was answered", "ResponsesAnswer"
)
async def retrieve_response(
    request: Request, ctx: Ctx, principal: CurrentPrincipal, response_id: str = RESPONSE_ID_PATH
) -> Response:
    async def answered(store: ResponseStore, who: LlmCall) -> Response | None:
        stored = await store.load(response_id, who.tenant, who.account)
        answer = stored.get("response") if stored is not None else None
        # None: absent, expired, another's, or stored before retrieval was
        return FastJSONResponse(answer) if isinstance(answer, dict) else None

    return await _owned(ctx, principal, response_id, answered, request.query_params.keys())


@_stored_route("DELETE", "Delete a stored response of the token's account", "ResponsesDeleted")
async def delete_response(
    request: Request, ctx: Ctx, principal: CurrentPrincipal, response_id: str = RESPONSE_ID_PATH
) -> Response:
    async def deleted(store: ResponseStore, who: LlmCall) -> Response | None:
        if not await store.delete(response_id, who.tenant, who.account):
            return None
        return JSONResponse({"id": response_id, "object": "response.deleted", "deleted": True})

    return await _owned(ctx, principal, response_id, deleted, request.query_params.keys())


async def _owned(
    state: AppState,
    principal: Principal,
    response_id: str,
    act: Callable[[ResponseStore, LlmCall], Awaitable[Response | None]],
    query: Iterable[str],
) -> Response:
    """`act` on the caller's stored response — a token without an account refused, then an id not of
    the shape this route issues, then a query parameter (`STORED_QUERY`: none is honoured, so none
    is dropped) — and one 404 where it found none (`_not_found`)."""
    try:
        who = gateway_call(principal)
        if RESPONSE_ID.fullmatch(response_id) is None:
            raise InvalidRequestError("response_id", "expected an id as `POST /v1/responses` answered it")
        asked = next(iter(query), None)
        if asked is not None:
            name = asked.removesuffix("[]")  # `include[]=…`, as some clients send a list
            raise InvalidRequestError(name, STORED_QUERY.get(name, "unknown query parameter"))
        answer = await act(ResponseStore(state.runtime.db, state.runtime.box), who)
        if answer is None:
            raise _not_found(response_id)
        return answer
    except Exception as exc:
        return error_response(exc)


def _not_found(response_id: str) -> HTTPException:
    """One answer for an id never issued, expired, deleted or another's: it says none of them."""
    return HTTPException(404, f"Response with id '{response_id}' not found.")


class Keeper:
    """Saves a finished response: the input items (history included) for `previous_response_id` and
    the response object as answered for retrieval, sealed (`storage/responses.py`)."""

    def __init__(self, store: ResponseStore, who: LlmCall, items: list[dict[str, Any]]) -> None:
        self.store, self.who, self.items = store, who, items

    async def save(self, answer: dict[str, Any]) -> None:
        who = self.who
        content = {"input": self.items, "response": answer}
        await self.store.save(answer["id"], who.tenant, who.project, who.account, content, now=time.time())


async def _history(store: ResponseStore, who: LlmCall, body: ResponsesRequest) -> list[dict[str, Any]]:
    """The stored conversation `previous_response_id` continues: its input, then its output."""
    if body.previous_response_id is None:
        return []
    stored = await store.load(body.previous_response_id, who.tenant, who.account)
    if stored is None:  # absent, expired, or another account's: the same answer for each
        raise InvalidRequestError(
            "previous_response_id", f"no stored response {body.previous_response_id!r} for this account"
        )
    answered = stored.get("response") or stored  # a row saved before retrieval kept `output` alone
    return [*stored.get("input", []), *answered.get("output", [])]


async def _events(
    upstream: AsyncIterator[StreamDelta | LlmResult],
    first: StreamDelta | LlmResult,
    events: ResponseEvents,
    keep: Keeper | None,
) -> AsyncIterator[bytes]:
    for piece in events.start():
        yield piece
    try:
        item = first
        while isinstance(item, StreamDelta):
            if item.kind == "text" and item.text:
                for piece in events.text_delta(item.text):
                    yield piece
            item = await upstream.__anext__()
        pieces, final = events.finish(item)
        if keep is not None:
            await keep.save(final)
        for piece in pieces:
            yield piece
    except Exception as exc:  # mid-stream: the status is sent already, so the error is an event
        status, payload, _ = error_parts(exc)
        log.warning("responses stream failed after it started (%s): %s", status, payload["error"]["message"])
        yield events.failed(payload["error"])
    finally:
        aclose = getattr(upstream, "aclose", None)
        if aclose is not None:
            await aclose()  # a client that went away abandons the call: it is settled on its own


def _parse(raw: bytes) -> tuple[dict[str, Any], ResponsesRequest]:
    try:
        data = json.loads(raw) if raw.strip() else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict):
        raise InvalidRequestError("body", "expected a JSON object: a Responses API request")
    return data, ResponsesRequest.model_validate(data)


__all__ = ["router"]

"""`/v1/research/*`: the tools as plain endpoints; bodies are the tools' input models.

Each answers with the tool's full JSON (`search*` → the `SearchResult` of DESIGN §3, `rich` →
results per modality, `investigate` → the `RankedHitSet`, `providers` → `{"providers": […]}`),
typed in OpenAPI by the models of `tools.outputs`, so a generated client gets classes, not dicts;
`POST /v1/tools/{name}` adds the text.

`POST /v1/research/investigate` with `Prefer: respond-async` answers 202 at once with a task
(`Location: /v1/tasks/{id}`, `routes/tasks.py`) that runs on, whatever becomes of the request.
With `Accept: text/event-stream` it streams the pipeline's steps as
Server-Sent Events (`event: progress`, data `{step, message, done, total, detail}`) and ends with
`event: result` (the same JSON as without the header) or `event: error` (`{"error": {field?, message}}`).

Beside the tool's own fields a body may say `"cache": false` (or the request send
`Cache-Control: no-cache`): its searches then skip cached answers. That switch is the caller's,
not the model's, so it is not part of the tool schemas.

The two search endpoints also take `overrides`, per-call ("process") settings innermost in the
cascade (DESIGN §2), e.g. `{"research.default.web": "brave"}` — admin tokens only (403 otherwise);
no tool schema has it either, so no model can set it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field

from ....contract.errors import AccessDeniedError, ZarniwoopError
from ....tools.base import ToolSpec
from ....tools.inputs import (
    ResearchInvestigateInput,
    ResearchProvidersInput,
    ResearchRichInput,
    ResearchSearchExpertInput,
    ResearchSearchInput,
)
from ....tools.investigate import INVESTIGATE
from ....tools.outputs import ProviderList, RankedHitSet, RichResult, SearchResult
from ....tools.providers import PROVIDERS
from ....tools.rich import RICH
from ....tools.search import SEARCH, SEARCH_EXPERT, checked_overrides
from ..deps import Caller, CallerInfo, Ctx
from ..errors import ERROR_RESPONSES, error_body
from ..fast_body import FastBodyRoute, fast_body
from ..fast_json import FastJSONResponse
from ..state import AppState
from .image import sign_hits, sign_thumbnails
from .tasks import Task, accepted, runner_of, task_caller, wants_async

if TYPE_CHECKING:
    from ....contract.progress import ProgressStep

log = logging.getLogger(__name__)
# FastBodyRoute: the search endpoints' plain requests skip FastAPI's body and dependency machinery
router = APIRouter(
    prefix="/v1/research", tags=["research"], responses=ERROR_RESPONSES, route_class=FastBodyRoute
)
EVENT_STREAM = "text/event-stream"
_SSE_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The ranked hit set; with `Accept: text/event-stream`: `progress` events, then "
        "`result` or `error`.",
        "content": {EVENT_STREAM: {"schema": {"type": "string"}}},
    },
    202: {
        "model": Task,
        "description": "With `Prefer: respond-async`: the task running it; poll `Location` "
        "(`/v1/tasks/{id}`) for progress and the result.",
    },
}


class _CacheSwitch(BaseModel):
    cache: bool = Field(True, description="false: skip cached answers and ask the providers (a refresh).")


class _Overrides(BaseModel):
    overrides: dict[str, str | int | float | bool] | None = Field(
        None,
        json_schema_extra={"propertyNames": {"pattern": r"^research\.[A-Za-z0-9_.-]{1,190}$"}},
        description=(
            "Admin only: per-call setting overrides, innermost in the cascade "
            '(e.g. {"research.default.web": "brave"}); only research.* keys.'
        ),
    )


class SearchBody(_Overrides, _CacheSwitch, ResearchSearchInput):
    pass


class SearchExpertBody(_Overrides, _CacheSwitch, ResearchSearchExpertInput):
    pass


class RichBody(_CacheSwitch, ResearchRichInput):
    pass


class InvestigateBody(_CacheSwitch, ResearchInvestigateInput):
    pass


def _state(request: Request) -> AppState:
    """The app's state, read directly (not a `Ctx` dependency: one FastAPI resolution less per search)."""
    state: AppState = request.app.state.zarniwoop
    return state


def _use_cache(request: Request | None, body: Any) -> bool:
    header = request.headers.get("cache-control", "").lower() if request is not None else ""
    return (body.cache if isinstance(body, _CacheSwitch) else True) and "no-cache" not in header


async def _run(
    state: AppState, caller: CallerInfo, spec: ToolSpec[Any], body: Any, request: Request | None = None
) -> JSONResponse:
    overrides = body.overrides if isinstance(body, _Overrides) else None
    if overrides and not caller.admin:
        raise AccessDeniedError("overrides: per-call setting overrides need an admin token")
    result = await state.toolbox.run(
        spec,
        body,
        caller.scope,
        admin=caller.admin,
        cache=_use_cache(request, body),
        profile=caller.profile,
        overrides=checked_overrides(overrides),
    )
    payload = result.full if result.full is not None else result.structured
    # image and video hits get a signed URL of the server's image proxy (the web UI's thumbnails);
    # a search answer's hits are all in its `hits`, other answers are walked for theirs
    if spec is SEARCH or spec is SEARCH_EXPERT:
        sign_hits(payload["hits"], state.runtime.box.sign)
    else:
        sign_thumbnails(payload, state.runtime.box.sign)
    # Already plain JSON: a JSONResponse skips FastAPI's re-validation of the return value.
    return FastJSONResponse(payload)


@router.post(
    "/search",
    operation_id="research_search",
    summary="research_search: one modality through the cascade",
    response_model=SearchResult,
)
@fast_body(SearchBody)
async def search(body: SearchBody, request: Request, caller: Caller) -> JSONResponse:
    return await _run(_state(request), caller, SEARCH, body, request)


@router.post(
    "/search_expert",
    operation_id="research_search_expert",
    summary="research_search_expert: filters or one pinned provider",
    response_model=SearchResult,
)
@fast_body(SearchExpertBody)
async def search_expert(body: SearchExpertBody, request: Request, caller: Caller) -> JSONResponse:
    return await _run(_state(request), caller, SEARCH_EXPERT, body, request)


@router.post(
    "/rich",
    operation_id="research_rich",
    summary="research_rich: WEB, IMAGE, VIDEO and NEWS concurrently",
    response_model=RichResult,
)
@fast_body(RichBody)
async def rich(body: RichBody, request: Request, caller: Caller) -> JSONResponse:
    return await _run(_state(request), caller, RICH, body, request)


@router.post(
    "/investigate",
    operation_id="research_investigate",
    summary="research_investigate: the curated pipeline, ranked hits with reasons",
    response_model=RankedHitSet,
    responses=_SSE_RESPONSE,
)
async def investigate(
    body: InvestigateBody, request: Request, ctx: Ctx, caller: Caller
) -> JSONResponse | StreamingResponse:
    if wants_async(request):  # RFC 7240: a task, polled at `Location`, outlives this request
        record = await runner_of(ctx).start(
            INVESTIGATE,
            body,
            task_caller(caller),
            admin=caller.admin,
            cache=_use_cache(request, body),
            profile=caller.profile,
        )
        return accepted(record)
    if EVENT_STREAM in request.headers.get("accept", ""):
        return StreamingResponse(
            _stream(ctx, caller, INVESTIGATE, body, _use_cache(request, body)),
            media_type=EVENT_STREAM,
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    return await _run(ctx, caller, INVESTIGATE, body, request)


@router.get(
    "/providers",
    operation_id="research_providers",
    summary="research_providers: instances, availability, quota, cooldowns",
    response_model=ProviderList,
)
async def providers(ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, PROVIDERS, ResearchProvidersInput())


async def _stream(
    state: AppState, caller: CallerInfo, spec: ToolSpec[Any], body: Any, cache: bool
) -> AsyncIterator[str]:
    """Progress events while the tool runs, then its result (or its error) as the last event."""
    steps: asyncio.Queue[ProgressStep | None] = asyncio.Queue()

    async def observe(step: ProgressStep) -> None:
        steps.put_nowait(step)

    async def work() -> Any:
        try:
            return await state.toolbox.run(
                spec,
                body,
                caller.scope,
                admin=caller.admin,
                cache=cache,
                progress=observe,
                profile=caller.profile,
            )
        finally:
            steps.put_nowait(None)

    task = asyncio.create_task(work())
    try:
        while (step := await steps.get()) is not None:
            yield _event("progress", step.to_json())
        try:
            result = task.result()
        except ZarniwoopError as exc:
            yield _event("error", error_body(exc.message, getattr(exc, "field", None)))
            return
        except Exception:  # the status line is sent: the stream's last event says it failed
            log.exception("streamed %s failed", spec.name)
            yield _event("error", error_body("internal error; the server log has the details"))
            return
        yield _event("result", result.full if result.full is not None else result.structured)
    finally:
        if not task.done():  # the client went away: stop the research it no longer waits for
            task.cancel()


def _event(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"

"""`/v1/research/*`: the tools as plain endpoints; bodies are the tools' input models.

Each answers with the tool's structured JSON (`search*` → the `SearchResult` of DESIGN §3, `rich` →
results per modality, `providers` → `{"providers": […]}`); `POST /v1/tools/{name}` adds the text.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ....tools.base import ToolSpec
from ....tools.inputs import (
    ResearchInvestigateInput,
    ResearchProvidersInput,
    ResearchRichInput,
    ResearchSearchExpertInput,
    ResearchSearchInput,
)
from ....tools.investigate import INVESTIGATE
from ....tools.providers import PROVIDERS
from ....tools.rich import RICH
from ....tools.search import SEARCH, SEARCH_EXPERT
from ..deps import Caller, CallerInfo, Ctx
from ..errors import ERROR_RESPONSES
from ..state import AppState

router = APIRouter(prefix="/v1/research", tags=["research"], responses=ERROR_RESPONSES)


async def _run(state: AppState, caller: CallerInfo, spec: ToolSpec[Any], body: Any) -> JSONResponse:
    result = await state.toolbox.run(spec, body, caller.scope, admin=caller.admin)
    # Already plain JSON: a JSONResponse skips FastAPI's re-validation of the return value.
    return JSONResponse(result.structured)


@router.post("/search", summary="research_search: one modality through the cascade")
async def search(body: ResearchSearchInput, ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, SEARCH, body)


@router.post("/search_expert", summary="research_search_expert: filters or one pinned provider")
async def search_expert(body: ResearchSearchExpertInput, ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, SEARCH_EXPERT, body)


@router.post("/rich", summary="research_rich: WEB, IMAGE, VIDEO and NEWS concurrently")
async def rich(body: ResearchRichInput, ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, RICH, body)


@router.post("/investigate", summary="research_investigate: the curated pipeline, ranked hits with reasons")
async def investigate(body: ResearchInvestigateInput, ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, INVESTIGATE, body)


@router.get("/providers", summary="research_providers: instances, availability, quota, cooldowns")
async def providers(ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, PROVIDERS, ResearchProvidersInput())

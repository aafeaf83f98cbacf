"""`/v1/research/*`: the tools as plain endpoints; bodies are the tools' input models.

Each answers with the tool's structured JSON (`search*` → the `SearchResult` of DESIGN §3, `rich` →
results per modality, `providers` → `{"providers": […]}`); `POST /v1/tools/{name}` adds the text.

The two search endpoints also take `overrides`, per-call ("process") settings innermost in the
cascade (DESIGN §2), e.g. `{"research.default.web": "brave"}` — admin tokens only (403 otherwise).
It is not part of the tool schemas, so no model can set it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import Field

from ....contract.errors import AccessDeniedError
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
from ....tools.search import SEARCH, SEARCH_EXPERT, checked_overrides
from ..deps import Caller, CallerInfo, Ctx
from ..errors import ERROR_RESPONSES
from ..state import AppState

router = APIRouter(prefix="/v1/research", tags=["research"], responses=ERROR_RESPONSES)


OverridesField = Field(
    None,
    description=(
        "Admin only: per-call setting overrides, innermost in the cascade "
        '(e.g. {"research.default.web": "brave"}); only research.* keys.'
    ),
)


class SearchBody(ResearchSearchInput):
    overrides: dict[str, str | int | float | bool] | None = OverridesField


class SearchExpertBody(ResearchSearchExpertInput):
    overrides: dict[str, str | int | float | bool] | None = OverridesField


async def _run(
    state: AppState,
    caller: CallerInfo,
    spec: ToolSpec[Any],
    body: Any,
    overrides: dict[str, str | int | float | bool] | None = None,
) -> JSONResponse:
    if overrides and not caller.admin:
        raise AccessDeniedError("overrides: per-call setting overrides need an admin token")
    checked = checked_overrides(overrides)
    result = await state.toolbox.run(spec, body, caller.scope, admin=caller.admin, overrides=checked)
    # Already plain JSON: a JSONResponse skips FastAPI's re-validation of the return value.
    return JSONResponse(result.structured)


@router.post("/search", summary="research_search: one modality through the cascade")
async def search(body: SearchBody, ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, SEARCH, body, body.overrides)


@router.post("/search_expert", summary="research_search_expert: filters or one pinned provider")
async def search_expert(body: SearchExpertBody, ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, SEARCH_EXPERT, body, body.overrides)


@router.post("/rich", summary="research_rich: WEB, IMAGE, VIDEO and NEWS concurrently")
async def rich(body: ResearchRichInput, ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, RICH, body)


@router.post("/investigate", summary="research_investigate: the curated pipeline, ranked hits with reasons")
async def investigate(body: ResearchInvestigateInput, ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, INVESTIGATE, body)


@router.get("/providers", summary="research_providers: instances, availability, quota, cooldowns")
async def providers(ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, PROVIDERS, ResearchProvidersInput())

"""`/v1/research/*`: the tools as plain endpoints; bodies are the tools' input models.

Each answers with the tool's structured JSON (`search*` → the `SearchResult` of DESIGN §3, `rich` →
results per modality, `providers` → `{"providers": […]}`); `POST /v1/tools/{name}` adds the text.

Beside the tool's own fields a body may say `"cache": false` (or the request send
`Cache-Control: no-cache`): its searches then skip cached answers. That switch is the caller's,
not the model's, so it is not part of the tool schemas.

The two search endpoints also take `overrides`, per-call ("process") settings innermost in the
cascade (DESIGN §2), e.g. `{"research.default.web": "brave"}` — admin tokens only (403 otherwise);
no tool schema has it either, so no model can set it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

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
from .image import sign_thumbnails

router = APIRouter(prefix="/v1/research", tags=["research"], responses=ERROR_RESPONSES)


class _CacheSwitch(BaseModel):
    cache: bool = Field(True, description="false: skip cached answers and ask the providers (a refresh).")


class _Overrides(BaseModel):
    overrides: dict[str, str | int | float | bool] | None = Field(
        None,
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
        overrides=checked_overrides(overrides),
    )
    # image and video hits get a signed URL of the server's image proxy (the web UI's thumbnails)
    sign_thumbnails(result.structured, state.runtime.box.sign)
    # Already plain JSON: a JSONResponse skips FastAPI's re-validation of the return value.
    return JSONResponse(result.structured)


@router.post("/search", summary="research_search: one modality through the cascade")
async def search(body: SearchBody, request: Request, ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, SEARCH, body, request)


@router.post("/search_expert", summary="research_search_expert: filters or one pinned provider")
async def search_expert(body: SearchExpertBody, request: Request, ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, SEARCH_EXPERT, body, request)


@router.post("/rich", summary="research_rich: WEB, IMAGE, VIDEO and NEWS concurrently")
async def rich(body: RichBody, request: Request, ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, RICH, body, request)


@router.post("/investigate", summary="research_investigate: the curated pipeline, ranked hits with reasons")
async def investigate(body: InvestigateBody, request: Request, ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, INVESTIGATE, body, request)


@router.get("/providers", summary="research_providers: instances, availability, quota, cooldowns")
async def providers(ctx: Ctx, caller: Caller) -> JSONResponse:
    return await _run(ctx, caller, PROVIDERS, ResearchProvidersInput())

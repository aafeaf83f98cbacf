"""`GET /v1/_routing`: which provider serves each modality now and why the others do not; where each
LLM alias resolves (`views/routing.py`)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ..deps import Caller, Ctx
from ..errors import ERROR_RESPONSES
from ..responses import RoutingView

router = APIRouter(tags=["routing"], responses=ERROR_RESPONSES)


@router.get(
    "/v1/_routing",
    summary="Routing view: per instance state, per modality the cascade",
    response_model=RoutingView,
)
async def routing(ctx: Ctx, caller: Caller) -> JSONResponse:
    # The model documents the shape; the view goes out as it is (other layers add their own blocks).
    return JSONResponse(await ctx.runtime.routing_report(caller.scope, admin=caller.admin))

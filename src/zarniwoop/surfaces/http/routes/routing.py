"""`GET /v1/_routing`: which provider serves each modality now and why the others do not; where each
LLM alias resolves (`views/routing.py`); `GET /v1/profiles`: the agent profiles."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from .... import operations
from ....contract.query import PROFILE_RULE, check_profile
from ....views.providers import profile_entries
from ..deps import Caller, Ctx
from ..errors import ERROR_RESPONSES
from ..responses import ProfileList, RoutingView

router = APIRouter(tags=["routing"], responses=ERROR_RESPONSES)


@router.get(
    "/v1/_routing",
    summary="Routing view: per instance state, per modality the cascade",
    response_model=RoutingView,
)
async def routing(
    ctx: Ctx,
    caller: Caller,
    profile: Annotated[
        str | None,
        Query(
            max_length=64,
            description="Also show this agent profile's cascades.",
            json_schema_extra={"pattern": f"^{PROFILE_RULE}$"},
        ),
    ] = None,
) -> JSONResponse:
    # The model documents the shape; the view goes out as it is (other layers add their own blocks).
    view = await operations.routing_report(
        ctx.runtime, caller.scope, admin=caller.admin, profile=check_profile("profile", profile)
    )
    return JSONResponse(view)


@router.get(
    "/v1/profiles",
    summary="Agent profiles: providers per modality, content identity (sha256), settings level",
    response_model=ProfileList,
)
async def list_profiles(ctx: Ctx, caller: Caller) -> JSONResponse:
    return JSONResponse(await profile_entries(ctx.runtime.dispatcher, caller.scope))

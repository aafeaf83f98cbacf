"""`GET /v1/_routing`: which provider serves each modality now and why the others do not; where each
LLM alias resolves (`views/routing.py`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ..deps import Caller, Ctx
from ..errors import ERROR_RESPONSES

router = APIRouter(tags=["routing"], responses=ERROR_RESPONSES)


@router.get("/v1/_routing", summary="Routing view: per instance state, per modality the cascade")
async def routing(ctx: Ctx, caller: Caller) -> dict[str, Any]:
    return await ctx.runtime.routing_report(caller.scope, admin=caller.admin)

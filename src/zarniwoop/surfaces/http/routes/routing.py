"""`GET /v1/_routing`: which provider serves each modality now, and why the others do not."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ....dispatch.status import ROUTING_SECTIONS_KEY, routing_view
from ..deps import Caller, Ctx

router = APIRouter(tags=["routing"])


@router.get("/v1/_routing", summary="Routing view: per instance state, per modality the cascade")
async def routing(ctx: Ctx, caller: Caller) -> dict[str, Any]:
    sections = ctx.runtime.extras.get(ROUTING_SECTIONS_KEY)
    return await routing_view(ctx.runtime.dispatcher, caller.scope, admin=caller.admin, sections=sections)

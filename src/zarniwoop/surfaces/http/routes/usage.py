"""`GET /v1/usage`: per-instance call counts of the scope, from the usage service when one is attached.

The usage counter is a service of its own (`runtime.extras["usage"]`, an object with
`async summary(scope)` returning JSON-able data). Without it the answer says so plainly —
`"enabled": false` — rather than inventing numbers.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ..deps import Caller, Ctx

router = APIRouter(tags=["usage"])
EXTRAS_KEY = "usage"


@router.get("/v1/usage", summary="Provider calls of the scope per instance (when usage tracking is on)")
async def usage(ctx: Ctx, caller: Caller) -> dict[str, Any]:
    scope = {"tenant": caller.scope.tenant, "project": caller.scope.project}
    service = ctx.runtime.extras.get(EXTRAS_KEY)
    if service is None:
        return {
            "scope": scope,
            "enabled": False,
            "message": "usage tracking not enabled: no usage service is attached to this server",
        }
    return {"scope": scope, "enabled": True, "usage": await service.summary(caller.scope)}

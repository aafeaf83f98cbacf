"""`GET /v1/usage?since=24h`: provider calls of the scope per instance and modality, from the audit log.

The usage report is a service of its own, attached as `runtime.extras["usage"]`: an object with
`async summary(scope, *, since: str)` returning the report (`since`: `24h`, `7d`, `30m` or an ISO
date; a bad value raises `InvalidRequestError("since", …)`, a 422 here). The answer mirrors
`zarniwoop usage --json`: `{"scope", "enabled": true, "research": report}`. Without the service
it says so plainly — `"enabled": false` — rather than inventing numbers.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from ..deps import Caller, Ctx

router = APIRouter(tags=["usage"])
EXTRAS_KEY = "usage"


@router.get("/v1/usage", summary="Provider calls of the scope per instance and modality")
async def usage(
    ctx: Ctx,
    caller: Caller,
    since: Annotated[
        str, Query(max_length=40, description="Window start: 24h, 7d, 30m or an ISO date.")
    ] = "24h",
) -> dict[str, Any]:
    scope = {"tenant": caller.scope.tenant, "project": caller.scope.project}
    service = ctx.runtime.extras.get(EXTRAS_KEY)
    if service is None:
        return {
            "scope": scope,
            "enabled": False,
            "message": "usage tracking not enabled: no usage service is attached to this server",
        }
    return {"scope": scope, "enabled": True, "research": await service.summary(caller.scope, since=since)}

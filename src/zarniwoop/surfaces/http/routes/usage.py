"""`GET /v1/usage?since=24h`: provider calls of the scope per instance and modality, from the audit log.

The same report as `zarniwoop usage --json` (`services/usage.py`): calls, hits, failures, p50/p95
latency and quota per instance and modality since `since` (`24h`, `7d`, `30m` or an ISO date; a
bad value is a 422 naming `since`). `"enabled": false` says so plainly when this runtime has no
audit log attached, rather than inventing numbers.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from ....services.usage import parse_since, research_usage
from ..deps import Caller, Ctx

router = APIRouter(tags=["usage"])


@router.get("/v1/usage", summary="Provider calls of the scope per instance and modality")
async def usage(
    ctx: Ctx,
    caller: Caller,
    since: Annotated[
        str, Query(max_length=40, description="Window start: 24h, 7d, 30m or an ISO date.")
    ] = "24h",
) -> dict[str, Any]:
    scope = {"tenant": caller.scope.tenant, "project": caller.scope.project}
    if ctx.runtime.usage is None:
        return {
            "scope": scope,
            "enabled": False,
            "message": "usage tracking not enabled: no audit log is attached",
        }
    research = await research_usage(ctx.runtime, caller.scope, since=parse_since(since))
    research.pop("scope", None)
    return {"scope": scope, "enabled": True, "research": research}

"""`/v1/admin/*`: admin actions.

POST /v1/admin/projects/{project}/stop   dispose the project's provider instances and workspace
                                         (an admin of that project, a tenant admin, the operator)
POST /v1/admin/ai-models/refresh         reload every model-catalog layer now (operator only:
                                         the catalog is process-wide)
POST /v1/admin/ai-models/discover        list the models of the scope's LLM provider instances,
                                         then refresh the catalog (operator only, likewise)
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from .... import operations
from ..deps import NAME_PARAM, Caller, Ctx, CurrentPrincipal, Operator
from ..errors import ERROR_RESPONSES

router = APIRouter(prefix="/v1/admin", tags=["admin"], responses=ERROR_RESPONSES)


@router.post("/projects/{project}/stop", summary="Dispose a project's provider instances and workspace")
async def stop(
    project: Annotated[str, Path(description="The project (the one name rule).", **NAME_PARAM)],
    ctx: Ctx,
    principal: CurrentPrincipal,
    tenant: Annotated[str | None, Query(**NAME_PARAM)] = None,
) -> dict[str, Any]:
    from ....contract.errors import AccessDeniedError

    scope = principal.scope_for(tenant, project)  # a token of another project: 403
    if not principal.admin:
        raise AccessDeniedError("stopping a project needs an admin token")
    disposed = await operations.stop_project(ctx.runtime, scope)
    return {"tenant": scope.tenant, "project": scope.project, "stopped": True, "disposed": disposed}


@router.post("/ai-models/refresh", summary="Reload every model-catalog layer now")
async def refresh_models(ctx: Ctx, operator: Operator) -> dict[str, Any]:
    return await operations.refresh_catalog(ctx.runtime)


@router.post("/ai-models/discover", summary="Discover the models of the scope's LLM provider instances")
async def discover_models(ctx: Ctx, operator: Operator, caller: Caller) -> dict[str, Any]:
    return await operations.discover_models(ctx.runtime, caller.scope)

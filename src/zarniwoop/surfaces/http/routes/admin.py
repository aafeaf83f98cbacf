"""`/v1/admin/*`: admin actions.

POST /v1/admin/projects/{project}/stop   dispose the project's provider instances and workspace
                                         (an admin of that project, a tenant admin, the operator)
POST /v1/admin/ai-models/refresh         reload the model catalog now: a tenant admin its tenant's
                                         layers (`?tenant=`, default the token's), the operator
                                         every layer (no `?tenant=`, or `_system`) — seed 002 §3a.4
POST /v1/admin/ai-models/discover        list the models of the scope's LLM provider instances,
                                         then refresh the catalog (operator only, likewise)
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from .... import operations
from ....contract.names import MAX_NAME_CHARS, NAME_RULE, SYSTEM_TENANT
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


@router.post("/ai-models/refresh", summary="Reload the model catalog of a tenant, or every layer")
async def refresh_models(
    ctx: Ctx,
    principal: CurrentPrincipal,
    tenant: Annotated[
        str | None,
        Query(
            max_length=MAX_NAME_CHARS,
            description="Whose layers (default: the token's tenant; `_system` or none for an operator: every layer).",
            json_schema_extra={"pattern": f"^({SYSTEM_TENANT}|{NAME_RULE})$", "minLength": 1},
        ),
    ] = None,
) -> dict[str, Any]:
    from ....contract.errors import AccessDeniedError

    if tenant == SYSTEM_TENANT or (tenant is None and principal.operator):
        if not principal.operator:
            raise AccessDeniedError(
                "refreshing the system catalog (every tenant's) needs an operator token; "
                "a tenant admin refreshes its own tenant"
            )
        return await operations.refresh_catalog(ctx.runtime)
    scope = principal.scope_for(tenant)  # a token of another tenant: 403
    if not principal.tenant_admin:
        raise AccessDeniedError("refreshing a tenant's model catalog needs a tenant-admin token")
    return await operations.refresh_catalog(ctx.runtime, scope.tenant)


@router.post("/ai-models/discover", summary="Discover the models of the scope's LLM provider instances")
async def discover_models(ctx: Ctx, operator: Operator, caller: Caller) -> dict[str, Any]:
    # the console's Discover: every instance the caller's scope reads, as its calls do (issue 46)
    return await operations.discover_models(ctx.runtime, caller.scope, inherited=True)

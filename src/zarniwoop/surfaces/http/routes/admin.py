"""`/v1/admin/*`: operator actions; admin tokens only, and only for the scope the token is bound to."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from ....services.projects import stop_project
from ..deps import Ctx, CurrentPrincipal

router = APIRouter(prefix="/v1/admin", tags=["admin"])
NAME = r"^[A-Za-z0-9_][A-Za-z0-9_\-.]{0,99}$"


@router.post("/projects/{project}/stop", summary="Dispose a project's provider instances and workspace")
async def stop(
    project: Annotated[str, Path(pattern=NAME)],
    ctx: Ctx,
    principal: CurrentPrincipal,
    tenant: Annotated[str | None, Query(pattern=NAME)] = None,
) -> dict[str, Any]:
    from ....contract.errors import AccessDeniedError

    scope = principal.scope_for(tenant, project)  # a token of another project: 403
    if not principal.admin:
        raise AccessDeniedError("stopping a project needs an admin token")
    disposed = await stop_project(ctx.runtime, scope)
    return {"tenant": scope.tenant, "project": scope.project, "stopped": True, "disposed": disposed}

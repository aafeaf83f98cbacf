"""OAuth 2.0 protected-resource metadata (RFC 9728) with `auth: oauth`, else 404.

`GET /.well-known/oauth-protected-resource` and the same path with the resource's own path appended
(RFC 9728 §3.1: `https://host/zarniwoop` → `/.well-known/oauth-protected-resource/zarniwoop`), built
and served by the MCP SDK's own metadata handler: the resource (`auth.resource`), the authorization
servers (the configured issuers), the scopes (`zarniwoop:user`, `:admin`, `:tenant-admin`).
No token needed: an MCP client reads it after its first 401 to learn where to sign in.

With the built-in authorization server (`auth.builtin`), the consent page calls
`GET /v1/oauth/requests/{id}` (who asks, where it goes back to) and `POST /v1/oauth/requests/{id}`
(`{approve, tenant?, project, role}` → `{redirect}`: the client's `redirect_uri` with the code), as
an admin: never more than the admin holds.

Grants (issue 45): `GET /v1/oauth/grants` lists the caller's tenant's live grants (client, project,
role, approving token, dates), `DELETE /v1/oauth/grants/{id}` ends one — tenant admins only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from ....contract.errors import AccessDeniedError
from ....tenancy.oauth_grants import GrantStore
from ..deps import AdminCaller, CallerInfo, Ctx, RecordId
from ..state import AppState

if TYPE_CHECKING:  # the MCP SDK's auth, which it builds on, loads only with `auth.builtin`
    from ..oauth_server import BuiltinAuthServer

router = APIRouter(tags=["oauth"])
METADATA_PATH = "/.well-known/oauth-protected-resource"


@router.get(METADATA_PATH, include_in_schema=False)
@router.get(METADATA_PATH + "/{resource_path:path}", include_in_schema=False)
async def protected_resource_metadata(request: Request, ctx: Ctx) -> Response:
    if ctx.resource_metadata is None:
        raise HTTPException(404, "this server does not take OAuth access tokens (serve --auth oauth)")
    return await ctx.resource_metadata.handle(request)


class ConsentBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    approve: bool = True
    tenant: str | None = Field(default=None, max_length=100)
    project: str = Field(default="default", max_length=100)
    role: str = Field(default="user", max_length=20)


def _server(ctx: AppState) -> BuiltinAuthServer:
    if ctx.auth_server is None:
        raise HTTPException(404, "this server has no built-in authorization server (auth.builtin)")
    return ctx.auth_server


@router.get("/v1/oauth/requests/{request_id}", summary="A sign-in request waiting for consent")
async def pending_request(
    request_id: RecordId,
    ctx: Ctx,
    admin: AdminCaller,
) -> dict[str, Any]:
    client, params = await _server(ctx).pending(request_id)
    return {
        "client": client.client_name or client.client_id,
        "redirectUri": str(params.redirect_uri),
        "scopes": params.scopes or [],
        "tenant": admin.scope.tenant,
    }


@router.post("/v1/oauth/requests/{request_id}", summary="Grant (or deny) a sign-in request")
async def decide_request(
    request_id: RecordId,
    body: ConsentBody,
    ctx: Ctx,
    admin: AdminCaller,
) -> dict[str, str]:
    tenant = body.tenant or admin.scope.tenant
    redirect = await _server(ctx).decide(
        request_id, admin.principal, approve=body.approve, tenant=tenant, project=body.project, role=body.role
    )
    return {"redirect": redirect}


def _grants_tenant(caller: CallerInfo) -> str:
    """The tenant whose grants the caller may see and end (`*`: the operator sees every tenant's)."""
    if caller.principal.operator:
        return caller.principal.tenant
    if not caller.principal.tenant_admin:
        raise AccessDeniedError("sign-in grants are tenant-wide: they need a tenant-admin token")
    return caller.scope.tenant


@router.get("/v1/oauth/grants", summary="The tenant's OAuth grants (built-in authorization server)")
async def list_grants(ctx: Ctx, admin: AdminCaller) -> dict[str, Any]:
    grants = await GrantStore(ctx.runtime.db).list(_grants_tenant(admin), now=ctx.runtime.clock.now())
    return {"grants": [grant.to_json() for grant in grants]}


@router.delete("/v1/oauth/grants/{grant_id}", summary="End an OAuth grant: its refresh tokens stop working")
async def revoke_grant(
    grant_id: RecordId,
    ctx: Ctx,
    admin: AdminCaller,
) -> dict[str, Any]:
    await GrantStore(ctx.runtime.db).revoke(grant_id, _grants_tenant(admin))
    return {"id": grant_id, "revoked": True}

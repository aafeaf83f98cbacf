"""`/v1/tokens`: the console's API-token page — list, create (the token is shown once), revoke.

GET    /v1/tokens          the active tokens within the caller's reach, with full ids
POST   /v1/tokens          `{"tenant", "project", "role", "label"}` → 201 with the token, once;
                           tenant and project default to the scope the request acts on
DELETE /v1/tokens/{id}     revoke one → the revoked record

Admin tokens only. A token reaches the tokens bound inside its own binding: an operator token
(`*`/`*`) all of them, a tenant token (`acme`/`*`) its tenant's, a project token its project's.
It may create only tokens within that reach (never a wider one) — so a project admin never makes a
tenant-admin (bound to project `*`) —, and a token outside its reach is
answered as absent (404), so ids of other tenants are not confirmed. Ids are logged, never tokens.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from ....contract.errors import AccessDeniedError
from ....contract.names import MAX_NAME_CHARS, NAME_RULE
from ....tenancy.tokens import ANY, Principal, TokenRecord
from ..deps import AdminCaller, Ctx, RecordId
from ..errors import ERROR_RESPONSES

router = APIRouter(prefix="/v1/tokens", tags=["tokens"], responses=ERROR_RESPONSES)
log = logging.getLogger(__name__)


BINDING: dict[str, Any] = {"pattern": rf"^(\*|{NAME_RULE})$"}
"""A token binds a name of the one name rule (`contract/names.py`), or `*`."""


class TokenCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={  # a tenant-admin token: one tenant, every project of it (as the store checks)
            "if": {"properties": {"role": {"const": "tenant-admin"}}, "required": ["role"]},
            "then": {
                "properties": {"project": {"const": "*"}, "tenant": {"not": {"const": "*"}}},
                "required": ["project"],
            },
        },
    )
    tenant: str | None = Field(
        default=None,
        max_length=MAX_NAME_CHARS,
        description="Default: the scope the request acts on; `*` for every tenant",
        json_schema_extra=BINDING,
    )
    project: str | None = Field(
        default=None,
        max_length=MAX_NAME_CHARS,
        description="Default: the scope the request acts on; `*` for every project",
        json_schema_extra=BINDING,
    )
    role: Literal["user", "admin", "tenant-admin"] = "user"
    label: str | None = Field(default=None, max_length=200)


def _reaches(principal: Principal, tenant: str, project: str) -> bool:
    """Whether a token bound like `principal` covers a binding `(tenant, project)`."""
    return principal.tenant in (ANY, tenant) and principal.project in (ANY, project)


def _within(principal: Principal, record: TokenRecord) -> bool:
    return _reaches(principal, record.tenant, record.project)


@router.get("", summary="The active API tokens within this token's reach")
async def list_tokens(ctx: Ctx, admin: AdminCaller) -> dict[str, Any]:
    records = await ctx.runtime.tokens.records()
    return {"tokens": [r.to_json() for r in records if _within(admin.principal, r)]}


@router.post("", status_code=201, summary="Create an API token (its value is shown this once)")
async def create_token(body: TokenCreate, ctx: Ctx, admin: AdminCaller) -> dict[str, Any]:
    principal = admin.principal
    tenant = (body.tenant or "").strip() or admin.scope.tenant
    project = (body.project or "").strip() or admin.scope.project
    if not _reaches(principal, tenant, project):
        raise AccessDeniedError(
            f"this token is bound to {principal.tenant}/{principal.project}: "
            f"it cannot create a token for {tenant}/{project}"
        )
    issued = await ctx.runtime.tokens.create(tenant, project, body.role, body.label or None)
    log.info(
        "token %s created by %s for %s/%s (%s)", issued.id, principal.token_id, tenant, project, body.role
    )
    return {**issued.to_json(), "label": body.label or None}


@router.delete("/{token_id}", summary="Revoke an API token by its id")
async def revoke_token(token_id: RecordId, ctx: Ctx, admin: AdminCaller) -> dict[str, Any]:
    store = ctx.runtime.tokens
    record = next((r for r in await store.records() if r.id == token_id), None)
    if record is None or not _within(admin.principal, record):
        raise HTTPException(404, f"no active token {token_id!r} within this token's reach")
    revoked = await store.revoke(token_id)
    log.info("token %s revoked by %s", token_id, admin.principal.token_id)
    return revoked.to_json()


__all__ = ["router"]

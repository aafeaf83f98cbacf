"""`/v1/credentials`: the console's credentials page — API keys of a tenant and its accounts.

GET    /v1/credentials?level=…&account=…   the credentials stored for the tenant: where each lives,
                                           `"set": true`, when and by whom it was last written, which
                                           LLM provider entries use it — never the value
PUT    /v1/credentials                     `{"level", "account"?, "name", "value"}`: set one, or
                                           rotate it when it exists → the stored record (no value)
DELETE /v1/credentials/{name}?level=…&account=…   delete one → `{"deleted": true, …}`; 404 when absent

Reach: credentials are tenant-wide (an account's key serves it in every project), so they need a
token for the whole tenant — a `tenant-admin`, an `admin` bound to project `*`, or the operator
(with `?tenant=`) — the same reach as tenant-level settings. A project admin and a user token get
403. The value is sealed at once (tenancy/credentials.py) and never answered, logged or put in an
error; every write is audited in `credential_changes` (who, when, which credential, what action).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from ....config import keys as K
from ....config.endpoints import endpoint_ids, operator_env
from ....config.keys import TENANT_LEVEL
from ....contract.errors import AccessDeniedError, InvalidRequestError
from ....contract.names import check_name
from ....contract.query import SearchScope
from ....tenancy.credentials import CredentialInfo, credential_references
from ....tenancy.credentials import check_name as check_credential_name
from ..deps import NAME_PARAM, AdminCaller, CallerInfo, Ctx
from ..errors import ERROR_RESPONSES

router = APIRouter(prefix="/v1/credentials", tags=["credentials"], responses=ERROR_RESPONSES)
log = logging.getLogger(__name__)
Level = Literal["tenant", "account"]
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$"
MAX_VALUE = 8192


class CredentialWrite(BaseModel):
    model_config = ConfigDict(extra="forbid")
    level: Level = Field(description="tenant, or account (then `account` names it)")
    account: str | None = Field(default=None, max_length=64, description="The account, at level account")
    name: str = Field(
        min_length=1,
        max_length=128,
        json_schema_extra={"pattern": NAME_PATTERN},  # checked by the store, with its own message
        description="The credential's name: what an LLM provider entry's api_key_ref names "
        "(cred_mike_openai), or a search endpoint's (its id, serper, or SERPER_API_KEY)",
    )
    value: str = Field(
        min_length=1, max_length=MAX_VALUE, repr=False, description="The key; sealed, never answered"
    )


class Credential(BaseModel):
    """A stored credential, as the API shows it: never its value, nor any part of it."""

    tenant: str
    level: str
    account: str | None = Field(description="The account (level account), else null")
    owner: str = Field(description="The account, team or project; `_tenant` at the tenant level")
    name: str
    set: Literal[True] = True
    origin: str = Field(description="Who wrote it last: console, cli or config")
    updatedAt: str = Field(description="When it was last set or rotated (ISO-8601 UTC)")
    updatedBy: str | None = Field(description="The token id of the console write, when it was one")
    usedBy: list[str] = Field(description="The LLM provider entries whose api_key_ref names it")


class NameSuggestion(BaseModel):
    name: str
    usedFor: str = Field(description="What would read a credential of this name")


class CredentialList(BaseModel):
    tenant: str
    credentials: list[Credential]
    suggestedNames: list[NameSuggestion] = Field(
        description="Names something of this tenant looks up: the api_key_ref of its LLM provider "
        "entries, the key variable of its search endpoints that take a key (serper → SERPER_API_KEY)"
    )


class CredentialWritten(Credential):
    rotated: bool = Field(description="True when a value was replaced, false when the name was new")


class CredentialDeleted(BaseModel):
    tenant: str
    level: str
    account: str | None
    name: str
    deleted: Literal[True] = True


def _tenant(caller: CallerInfo) -> str:
    """The tenant whose credentials this caller may manage (403 unless it reaches the whole tenant)."""
    if not caller.principal.tenant_admin:
        raise AccessDeniedError(
            "credentials are tenant-wide: they need a token for the whole tenant "
            "(a tenant-admin, or an admin bound to project *), not one project"
        )
    return caller.scope.tenant


def _owner(level: str, account: str | None) -> str | None:
    account = (account or "").strip() or None
    if level == "account":
        if account is None:
            raise InvalidRequestError("account", "an account-level credential needs the account name")
        return check_name("account", account)
    if account is not None:
        raise InvalidRequestError("account", "only an account-level credential names an account")
    return None


async def _audit(
    ctx: Ctx, caller: CallerInfo, tenant: str, level: str, owner: str, name: str, action: str
) -> None:
    token = caller.principal.token_id or "ephemeral"
    await ctx.runtime.db.execute(
        "INSERT INTO credential_changes (at, token_id, tenant, level, owner, name, action) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (datetime.now(UTC).isoformat(), token, tenant, level, owner, name, action),
    )
    log.info("credential %s %s/%s/%s %s by %s", action, tenant, level, owner, name, token)


async def _writers(ctx: Ctx, tenant: str) -> dict[tuple[str, str, str], str]:
    """The token that last set or rotated each credential of the tenant from the console."""
    rows = await ctx.runtime.db.fetchall(
        "SELECT level, owner, name, token_id FROM credential_changes "
        "WHERE tenant = ? AND action <> 'delete' ORDER BY at",
        (tenant,),
    )
    return {(lv, owner, name): token for lv, owner, name, token in rows}


def _row(
    info: CredentialInfo,
    uses: dict[tuple[str, str, str, str], list[str]],
    writers: dict[tuple[str, str, str], str],
) -> Credential:
    key = (info.level, info.owner, info.name)
    return Credential(
        tenant=info.tenant,
        level=info.level,
        account=info.owner if info.level == "account" else None,
        owner=info.owner,
        name=info.name,
        origin=info.origin,
        updatedAt=info.updated_at,
        updatedBy=writers.get(key) if info.origin == "console" else None,
        usedBy=uses.get((info.tenant, *key), []),
    )


@router.get("", summary="The tenant's stored credentials (names and places, never values)")
async def list_credentials(
    ctx: Ctx,
    admin: AdminCaller,
    level: Annotated[
        Literal["tenant", "account", "team", "project"] | None,
        Query(description="Only this level (default: every level)"),
    ] = None,
    account: Annotated[str | None, Query(description="Only this account's", **NAME_PARAM)] = None,
) -> CredentialList:
    tenant = _tenant(admin)
    if account is not None:
        check_name("account", account)
    rt = ctx.runtime
    await rt.credentials.refresh()
    await rt.org.refresh(max_age=1.0)
    uses = credential_references(rt.org)
    writers = await _writers(ctx, tenant)
    rows = [
        _row(info, uses, writers)
        for info in rt.credentials.list(tenant)
        if (level is None or info.level == level)
        and (account is None or (info.level == "account" and info.owner == account))
    ]
    return CredentialList(tenant=tenant, credentials=rows, suggestedNames=_suggestions(ctx, tenant, uses))


def _suggestions(
    ctx: Ctx, tenant: str, uses: dict[tuple[str, str, str, str], list[str]]
) -> list[NameSuggestion]:
    """The credential names the console offers for the name field (`<datalist>`), each once."""
    found: dict[str, str] = {}
    for (owner_tenant, _level, _owner, name), labels in sorted(uses.items()):
        if owner_tenant == tenant:
            found.setdefault(name, "; ".join(labels))
    rt = ctx.runtime
    settings = rt.settings.scoped(SearchScope(tenant, TENANT_LEVEL))
    for instance_id in endpoint_ids(settings):
        protocol = rt.protocols.get(settings.get(K.endpoint_key(instance_id, K.SUFFIX_PROTOCOL)) or "")
        env = operator_env(protocol) if protocol is not None else None
        if protocol is None or not (protocol.key_required or env):
            continue
        # The protocol's own endpoint answers to the operator's variable name (`NCBI_API_KEY`).
        own = env if env and instance_id == protocol.id else None
        name = own or f"{instance_id.upper().replace('-', '_')}_API_KEY"
        found.setdefault(name, f"search endpoint {instance_id} ({protocol.id})")
    return [NameSuggestion(name=n, usedFor=why) for n, why in found.items()]


@router.put("", summary="Set a credential, or rotate it when it exists (the value is never answered)")
async def write_credential(body: CredentialWrite, ctx: Ctx, admin: AdminCaller) -> CredentialWritten:
    tenant = _tenant(admin)
    owner = _owner(body.level, body.account)
    name = check_credential_name(body.name.strip())
    value = body.value.strip()
    if not value:
        raise InvalidRequestError("value", "a credential value must not be empty")
    store = ctx.runtime.credentials
    await store.refresh()
    stored_owner = owner or TENANT_LEVEL
    rotated = any((i.level, i.owner, i.name) == (body.level, stored_owner, name) for i in store.list(tenant))
    info = await store.set(tenant, body.level, owner, name, value, origin="console")
    await _audit(ctx, admin, tenant, body.level, stored_owner, name, "rotate" if rotated else "set")
    rt = ctx.runtime
    await rt.org.refresh(max_age=1.0)
    row = _row(info, credential_references(rt.org), await _writers(ctx, tenant))
    return CredentialWritten(**row.model_dump(), rotated=rotated)


@router.delete("/{name}", summary="Delete a credential")
async def delete_credential(
    name: Annotated[str, Path(max_length=128, pattern=NAME_PATTERN, description="The credential's name")],
    ctx: Ctx,
    admin: AdminCaller,
    level: Annotated[Level, Query(description="tenant, or account (then `account` names it)")] = "tenant",
    account: Annotated[str | None, Query(**NAME_PARAM)] = None,
) -> CredentialDeleted:
    tenant = _tenant(admin)
    owner = _owner(level, account)
    if not await ctx.runtime.credentials.delete(tenant, level, owner, name):
        where = f"account {owner}" if owner else "the tenant"
        raise HTTPException(404, f"no credential {name!r} is stored for {where} of tenant {tenant}")
    await _audit(ctx, admin, tenant, level, owner or TENANT_LEVEL, name, "delete")
    return CredentialDeleted(tenant=tenant, level=level, account=owner, name=name)


__all__ = ["router"]

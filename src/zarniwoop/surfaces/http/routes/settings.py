"""`/v1/settings`, `/v1/setting-forms`: the web console writes settings as well as reads them.

GET  /v1/setting-forms          one form per installed protocol (config/forms.py)
GET  /v1/settings?level=…       the effective keys at a level, each with its level and source;
                                secrets as `"set": true`, never the value
PUT  /v1/settings               `{"level", "set": {key: value}, "delete": [key]}` → `{"written": n}`:
                                one batch, validated as a whole, all-or-nothing (config/writes.py)

Admin tokens only (a user token: 403), and each level needs its reach: `system` an operator token
(bound to `*`), `tenant` one not bound to a single project (or a tenant-admin), `project` any
admin of the project. Every write is audited — who, when, which keys — never a value.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from ....config.forms import setting_forms
from ....config.keys import SYSTEM_TENANT, TENANT_LEVEL
from ....config.writes import write_batch
from ....contract.errors import AccessDeniedError, ConfigError, InvalidRequestError
from ....contract.query import SearchScope
from ....views.settings import effective_settings
from ..deps import AdminCaller, CallerInfo, Ctx
from ..errors import ERROR_RESPONSES

router = APIRouter(tags=["settings"], responses=ERROR_RESPONSES)
log = logging.getLogger(__name__)
Level = Literal["system", "tenant", "project"]
MAX_KEYS = 200
"""A batch is a form's worth of keys; more is not a console's request."""


class SettingsWrite(BaseModel):
    model_config = ConfigDict(extra="forbid")
    level: Level
    set: dict[str, str | int | float | bool] = Field(default_factory=dict, max_length=MAX_KEYS)
    delete: list[str] = Field(default_factory=list, max_length=MAX_KEYS)


def _target(caller: CallerInfo, level: Level) -> tuple[str, str]:
    """The `(tenant, project)` a level writes to, if this caller may reach it."""
    from ....tenancy.tokens import ANY

    principal = caller.principal
    if level == "system":
        if principal.tenant != ANY:
            raise AccessDeniedError("system-level settings need an operator token (bound to tenant *)")
        return SYSTEM_TENANT, TENANT_LEVEL
    if level == "tenant":
        if principal.project != ANY and principal.role != "tenant-admin":
            raise AccessDeniedError(
                "tenant-level settings need a token for the whole tenant, not one project"
            )
        return caller.scope.tenant, TENANT_LEVEL
    return caller.scope.tenant, caller.scope.project


@router.get("/v1/setting-forms", summary="The console's setting form of each installed protocol")
async def forms(ctx: Ctx, admin: AdminCaller) -> dict[str, Any]:
    return {"forms": setting_forms(ctx.runtime.protocols)}


@router.get("/v1/settings", summary="Effective settings at a level, with level and source")
async def read(
    ctx: Ctx,
    admin: AdminCaller,
    level: Annotated[Level, Query(description="system, tenant or project (default)")] = "project",
) -> dict[str, Any]:
    tenant, project = _target(admin, level)
    rt = ctx.runtime
    await rt.settings.refresh(max_age=1.0)
    rows = effective_settings(rt.settings, SearchScope(tenant, project), defaults=True, masked=None)
    return {"level": level, "scope": {"tenant": tenant, "project": project}, "settings": rows}


@router.put("/v1/settings", summary="Write a batch of settings at one level, all or nothing")
async def write(body: SettingsWrite, ctx: Ctx, admin: AdminCaller) -> dict[str, Any]:
    from ....runtime import validate_all

    tenant, project = _target(admin, body.level)
    rt = ctx.runtime
    try:
        report = await write_batch(
            rt.settings,
            rt.protocols,
            (tenant, project),
            set=body.set,
            delete=body.delete,
            strict=True,
            validate=validate_all,
        )
    except ConfigError as exc:  # a batch that leaves the configuration invalid names its key: 422
        raise InvalidRequestError(exc.key, exc.reason) from None
    keys = sorted({*body.set, *body.delete})
    await rt.db.execute(
        "INSERT INTO settings_changes (at, token_id, tenant, project, keys) VALUES (?, ?, ?, ?, ?)",
        (
            datetime.now(UTC).isoformat(),
            admin.principal.token_id or "ephemeral",
            tenant,
            project,
            ",".join(keys),
        ),
    )
    log.info(
        "settings written at %s/%s by %s: %s", tenant, project, admin.principal.token_id, ", ".join(keys)
    )
    return {"written": report.written}


__all__ = ["router"]

"""Grants of the built-in authorization server: who may give one, when one ends, who can end it.

A grant is what an admin approved on the consent page — a client, a tenant, a project and a role —
living on as a family of rotating refresh tokens (`oauth_refresh_tokens`, one live row a family).
It is tied to the admin token that approved it (issue 45): when that token is revoked, or no longer
holds the tenant, project or role it granted (demoted), the grant's next refresh is refused and the
family deleted. Tenant admins list and revoke their tenant's grants (`GET /v1/oauth/grants`,
`DELETE /v1/oauth/grants/{id}`, `zarniwoop oauth grants list|revoke`).

    may_grant(admin, "acme", "review", "user")          # AccessDeniedError / InvalidRequestError
    store = GrantStore(db)
    await store.approver_holds(grant, live_ephemeral)   # False: the grant has ended
    [g.to_json() for g in await store.list("acme")]
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..contract.errors import AccessDeniedError, InvalidRequestError, UnknownNameError
from .tokens import ANY, ID_PREFIX, Principal

if TYPE_CHECKING:
    from ..storage.db import Database

GRANT_ROLES = ("user", "admin", "tenant-admin")
"""The roles a consent can grant, lowest first."""
EPHEMERAL_PREFIX = "ephemeral-"
"""The id of the admin token `serve` prints (it lives in that process: its grants end with it)."""


def may_grant(granter: Principal, tenant: str, project: str, role: str) -> None:
    """Raise unless `granter` may grant `role` on `tenant`/`project`: never more than it holds."""
    if role not in GRANT_ROLES:
        raise InvalidRequestError("role", f"expected one of {', '.join(GRANT_ROLES)}, got {role!r}")
    if not granter.admin:
        raise AccessDeniedError("granting a sign-in needs an admin token")
    if project == ANY and role != "tenant-admin":
        raise InvalidRequestError("project", "name one project (only a tenant-admin grant covers them all)")
    granter.scope_for(tenant, None if project == ANY else project)  # within the granter's reach
    held = "tenant-admin" if granter.tenant_admin else "admin"
    if GRANT_ROLES.index(role) > GRANT_ROLES.index(held):
        raise AccessDeniedError(f"a project admin cannot grant the role {role}")


def approver_of(granter: Principal) -> str:
    """The id a grant keeps of its approver; an approver whose end cannot be seen is refused."""
    token_id = granter.token_id or ""
    if token_id.startswith((ID_PREFIX, EPHEMERAL_PREFIX)):
        return token_id
    raise AccessDeniedError(
        "approve sign-ins with an admin API token (tokens create): a grant ends when its approver does"
    )


@dataclass(frozen=True, slots=True)
class Grant:
    id: str
    client_id: str
    tenant: str
    project: str
    role: str
    approver: str | None
    granted_at: float | None
    expires_at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "clientId": self.client_id,
            "tenant": self.tenant,
            "project": self.project,
            "role": self.role,
            "approver": self.approver,
            "grantedAt": _iso(self.granted_at),
            "refreshExpiresAt": _iso(self.expires_at),
        }


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class GrantStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def approver_holds(self, grant: dict[str, Any], live_ephemeral: Collection[str] = ()) -> bool:
        """Whether the token that approved `grant` still exists and may still grant it."""
        approver = grant.get("approver")
        if not isinstance(approver, str):
            return False  # approved before grants were tied to their approver: sign in again
        if approver.startswith(EPHEMERAL_PREFIX):
            return approver in live_ephemeral
        row = await self.db.fetchone(
            "SELECT tenant, project, role FROM tokens WHERE id = ? AND revoked_at IS NULL", (approver,)
        )
        if row is None:
            return False
        try:
            may_grant(
                Principal(row[0], row[1], row[2], approver), grant["tenant"], grant["project"], grant["role"]
            )
        except (AccessDeniedError, InvalidRequestError):
            return False
        return True

    async def list(self, tenant: str, *, now: float) -> list[Grant]:
        """The live grants of `tenant` (`*`: every tenant's), oldest first."""
        where, params = "used_at IS NULL AND expires_at > ?", list[object]([now])
        if tenant != ANY:
            where, params = where + " AND tenant = ?", [now, tenant]
        rows = await self.db.fetchall(
            f"SELECT family, client_id, grant_data, expires_at FROM oauth_refresh_tokens WHERE {where}",
            params,
        )
        grants = [_grant(*row) for row in rows]
        return sorted(grants, key=lambda g: (g.granted_at or 0.0, g.id))

    async def revoke(self, grant_id: str, tenant: str) -> int:
        """End grant `grant_id` of `tenant` (`*`: any); refresh tokens deleted.
        `UnknownNameError` when the tenant has no such grant (another tenant's is never named)."""
        where, params = "family = ?", [grant_id]
        if tenant != ANY:
            where, params = where + " AND tenant = ?", [grant_id, tenant]
        deleted = await self.db.execute(f"DELETE FROM oauth_refresh_tokens WHERE {where}", params)
        if not deleted:
            raise UnknownNameError("grant", f"no grant {grant_id!r} in this tenant")
        return int(deleted)


def _grant(family: Any, client_id: Any, data: Any, expires_at: Any) -> Grant:
    grant = json.loads(str(data))
    granted_at = grant.get("grantedAt")
    return Grant(
        str(family),
        str(client_id),
        str(grant["tenant"]),
        str(grant["project"]),
        str(grant["role"]),
        grant.get("approver"),
        float(granted_at) if granted_at is not None else None,
        float(expires_at),
    )


__all__ = ["EPHEMERAL_PREFIX", "GRANT_ROLES", "Grant", "GrantStore", "approver_of", "may_grant"]

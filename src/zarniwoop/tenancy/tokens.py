"""API tokens: each binds a tenant, a project and a role (and optionally an agent profile); stored hashed.

Roles (docs/security.md):
- `user` — searches and tools in its project; with `account`, its LLM usage is that account's only;
- `admin` — a project admin: also providers' last errors, stopping its project, the project's
  LLM usage by account;
- `tenant-admin` — every project of one tenant (project `*`), and the tenant-wide LLM usage;
- operator — an `admin` bound to tenant `*` (the token `serve` prints on loopback, or
  `tokens create --tenant '*' --project '*' --role admin`): `/metrics` and the process-wide
  actions (the system-wide model-catalog refresh, discovery); a tenant admin refreshes its
  tenant's catalog layers only.

A token is `zw_` + 43 random URL-safe characters. The database keeps only its SHA-256 and a
public id (`tok_…`) to list and revoke it by; the token itself is shown once, at creation.
`*` as tenant or project makes an operator token that may act on any; the admin token that
`zarniwoop serve` generates on loopback is such a token, and lives only in that process.

    store = TokenStore(runtime.db)
    issued = await store.create("acme", "review", "user")   # issued.token is shown once
    principal = await store.verify(issued.token)            # Principal(acme, review, user)
    await store.revoke(issued.id)

A token's binding (tenant, project, role, account, profile) never changes once created: only its
revocation does. So a process remembers what `verify` found (`recall`), and a gateway call made
with a remembered token confirms only that it is still unrevoked (`live`) — inside its budget
reservation's own round trip (`limits/budgets.py` `reserve(token=…)`), so a revocation still holds
at once on every replica while the call makes one storage round trip before its first upstream byte.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..contract.errors import AccessDeniedError, InvalidRequestError, ScopeRequiredError
from ..contract.names import check_name
from ..contract.query import SearchScope, check_profile

if TYPE_CHECKING:
    from ..storage.db import Database

ROLES = ("user", "admin", "tenant-admin")
ANY = "*"
TOKEN_PREFIX = "zw_"
ID_PREFIX = "tok_"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the scope a token is bound to and its role."""

    tenant: str
    project: str
    role: str
    token_id: str | None = None
    account: str | None = None
    """The account a user token acts as; it then sees only that account's LLM usage."""
    profile: str | None = None
    """The agent profile every search of this token routes through (`tokens create --profile`)."""

    @property
    def admin(self) -> bool:
        """An admin of the projects it may act on (a project admin, a tenant admin or the operator)."""
        return self.role in ("admin", "tenant-admin")

    @property
    def tenant_admin(self) -> bool:
        """May see and act on the whole tenant (its LLM usage, every project)."""
        return self.role == "tenant-admin" or (self.role == "admin" and self.project == ANY)

    @property
    def operator(self) -> bool:
        """The deployment's operator: an admin of every tenant. Process-wide actions need it."""
        return self.role == "admin" and self.tenant == ANY

    def narrowed(self, scope: SearchScope) -> Principal:
        """The same caller bound to one scope it may act on (`scope_for`'s answer)."""
        return Principal(scope.tenant, scope.project, self.role, self.token_id, self.account, self.profile)

    def scope_for(self, tenant: str | None = None, project: str | None = None) -> SearchScope:
        """The scope a request acts on: the token's own unless it names another one it may use.

        Raises `ScopeRequiredError` when a tenant or project is named but blank (`?project=`: not
        naming one means the token's), `InvalidRequestError` for a name outside the one name rule
        (`contract/names.py`: never a path, never a settings level) and `AccessDeniedError` when the
        token is not bound to the named tenant or project.
        """
        for name, value in (("tenant", tenant), ("project", project)):
            if value is not None and not value.strip():
                raise ScopeRequiredError(name)
        if tenant is not None:
            check_name("tenant", tenant)
        if project is not None:
            check_name("project", project)
        if tenant is not None and self.tenant not in (ANY, tenant):
            raise AccessDeniedError(f"this token is bound to tenant {self.tenant!r}, not {tenant!r}")
        if project is not None and self.project not in (ANY, project):
            raise AccessDeniedError(f"this token is bound to project {self.project!r}, not {project!r}")
        return SearchScope(
            tenant if tenant is not None else (self.tenant if self.tenant != ANY else "default"),
            project if project is not None else (self.project if self.project != ANY else "default"),
        )


@dataclass(frozen=True, slots=True)
class IssuedToken:
    id: str
    token: str
    tenant: str
    project: str
    role: str
    account: str | None = None
    profile: str | None = None

    def to_json(self) -> dict[str, str]:
        """The `tokens create --json` shape of DESIGN §6, plus the `id` that `tokens revoke` takes
        (and `account` when the token has one)."""
        out = {
            "token": self.token,
            "id": self.id,
            "tenant": self.tenant,
            "project": self.project,
            "role": self.role,
        }
        out |= {"account": self.account} if self.account else {}
        return out | ({"profile": self.profile} if self.profile else {})


@dataclass(frozen=True, slots=True)
class TokenRecord:
    id: str
    tenant: str
    project: str
    role: str
    label: str | None
    created_at: str
    revoked_at: str | None
    account: str | None = None
    profile: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {
            "id": self.id,
            "tenant": self.tenant,
            "project": self.project,
            "role": self.role,
            "account": self.account,
            "profile": self.profile,
            "label": self.label,
            "createdAt": self.created_at,
            "revokedAt": self.revoked_at,
        }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _check_binding(field: str, value: str) -> str:
    """A token binds a real tenant/project (the one name rule) or `*`; never a settings level."""
    return value if value == ANY else check_name(field, value)


LIVE_SQL = "SELECT 1 FROM tokens WHERE id = ? AND revoked_at IS NULL"
"""A remembered token is still good: its row is there and unrevoked (`TokenStore.live`)."""


class TokenStore:
    MAX_REMEMBERED = 4096
    """Principals kept by token hash at most (`recall`); the memory is emptied when it grows past it."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._known: dict[str, Principal] = {}

    async def create(
        self,
        tenant: str,
        project: str,
        role: str,
        label: str | None = None,
        *,
        account: str | None = None,
        profile: str | None = None,
    ) -> IssuedToken:
        tenant, project = _check_binding("tenant", tenant), _check_binding("project", project)
        if role not in ROLES:
            raise InvalidRequestError("role", f"expected one of {', '.join(ROLES)}, got {role!r}")
        if role == "tenant-admin" and (tenant == ANY or project != ANY):
            raise InvalidRequestError(
                "project" if tenant != ANY else "tenant",
                "a tenant-admin token is bound to one tenant and every project of it (--project '*')",
            )
        if account is not None:
            check_name("account", account)
        profile = check_profile("profile", profile)
        token, token_id = new_token(), ID_PREFIX + secrets.token_hex(6)
        await self.db.execute(
            "INSERT INTO tokens (id, token_hash, tenant, project, role, label, created_at, account, profile)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (token_id, hash_token(token), tenant, project, role, label, _now(), account, profile),
        )
        return IssuedToken(token_id, token, tenant, project, role, account, profile)

    async def verify(self, token: str) -> Principal | None:
        """The principal of a valid, unrevoked token; None otherwise."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        digest = hash_token(token)
        row = await self.db.fetchone(
            "SELECT id, tenant, project, role, account, profile FROM tokens"
            " WHERE token_hash = ? AND revoked_at IS NULL",
            (digest,),
        )
        if row is None:
            self._known.pop(digest, None)
            return None
        principal = Principal(row[1], row[2], row[3], row[0], row[4], row[5])
        if len(self._known) >= self.MAX_REMEMBERED:
            self._known.clear()
        self._known[digest] = principal
        return principal

    def recall(self, token: str) -> Principal | None:
        """The principal `verify` found for this token before, without asking the database: its
        binding, NOT that it is unrevoked — whoever acts on it must confirm `live(principal.token_id)`
        before doing anything for the caller (the gateway's reservation does, in its round trip)."""
        return self._known.get(hash_token(token)) if token.startswith(TOKEN_PREFIX) else None

    async def live(self, token_id: str) -> bool:
        """The token with this id exists and is not revoked (one statement)."""
        return await self.db.fetchone(LIVE_SQL, (token_id,)) is not None

    async def revoke(self, token_or_id: str) -> TokenRecord:
        """Revoke by the token itself or by its id; raises `InvalidRequestError` when there is no such token."""
        value = token_or_id.strip()
        column, key = ("token_hash", hash_token(value)) if value.startswith(TOKEN_PREFIX) else ("id", value)
        async with self.db.transaction():
            record = await self._find(column, key)
            if record is None:
                shown = "that token" if column == "token_hash" else repr(value)
                raise InvalidRequestError("token", f"no token {shown} exists")
            if record.revoked_at is None:
                await self.db.execute(
                    f"UPDATE tokens SET revoked_at = ? WHERE {column} = ? AND revoked_at IS NULL",
                    (_now(), key),
                )
                record = await self._find(column, key)
        assert record is not None
        self.forget(record.id)
        return record

    def forget(self, token_id: str) -> None:
        """Remember no more the token with this id (revoked here, or found revoked by another
        replica's doing): its next request is looked up, and refused before its body is read."""
        self._known = {k: p for k, p in self._known.items() if p.token_id != token_id}

    async def records(self, *, include_revoked: bool = False) -> list[TokenRecord]:
        where = "" if include_revoked else " WHERE revoked_at IS NULL"
        rows = await self.db.fetchall(
            "SELECT id, tenant, project, role, label, created_at, revoked_at, account, profile FROM tokens"
            + where
            + " ORDER BY created_at, id"
        )
        return [TokenRecord(*row) for row in rows]

    async def active_count(self) -> int:
        row = await self.db.fetchone("SELECT COUNT(*) FROM tokens WHERE revoked_at IS NULL")
        return int(row[0]) if row else 0

    async def _find(self, column: str, key: str) -> TokenRecord | None:
        row = await self.db.fetchone(
            f"SELECT id, tenant, project, role, label, created_at, revoked_at, account, profile FROM tokens WHERE {column} = ?",
            (key,),
        )
        return TokenRecord(*row) if row else None


__all__ = [
    "ANY",
    "LIVE_SQL",
    "ROLES",
    "IssuedToken",
    "Principal",
    "TokenRecord",
    "TokenStore",
    "hash_token",
    "new_token",
]

"""Tenants, teams, accounts and projects, each with an optional `llm_config` (seed 002 §2).

The config file's `tenants:` tree declares them (DESIGN §2); `sync_from_config` checks every
`llm:` block at start-up (a bad one is a `ConfigError` naming its path, exit 2) and makes the
units the directory's file layer for that run: in force while the file is given, never stored (a
unit an admin stored under the same name wins). An inline `api_key` becomes a credential of the same
layer, and the entry keeps an `api_key_ref` to it.

    tenants:
      acme:
        llm: {providers: [{provider: google, model: gemini-2.5-pro, api_key_ref: cred_tenant_google, priority: 10}]}
        teams:    {nlp: {llm: {quota: {monthly_tokens: 20000000}}}}
        accounts: {mike: {teams: [nlp], llm: {quota: {daily_tokens: 500000}}}}
        projects: {review: {team: nlp, llm: {quota: {monthly_tokens: 5000000}}}}

`OrgDirectory.scope(tenant, project, account)` gives the `CallScope` of one call: the units of
the four levels in cascade order (`levels.ORG_LEVELS`), any of them absent. What an `llm:` block
holds, and how it is checked, is `llm_config.py`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..config.keys import TENANT_LEVEL
from ..contract.clock import Clock
from ..contract.errors import ConfigError
from ..storage.table_watch import TableWatch
from .levels import LISTING_ORDER, ORG_LEVELS
from .llm_config import PROVIDER_ALIASES, FailoverPolicy, LlmConfig, parse_llm_config

if TYPE_CHECKING:
    from ..config.file import ConfigFile
    from ..storage.db import Database
    from .credentials import CredentialStore


@dataclass(frozen=True, slots=True)
class OrgUnit:
    tenant: str
    kind: str
    name: str
    llm: LlmConfig = field(default_factory=LlmConfig)
    team: str | None = None
    teams: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CallScope:
    """Who a call runs for: the tenant, the project, the account, and the team derived from them."""

    tenant: str
    project: str
    account: str
    team: str | None
    units: Mapping[str, OrgUnit | None]
    """`account`, `project`, `team`, `tenant` → the configured unit, or None."""

    def owner(self, level: str) -> str | None:
        return {"account": self.account, "project": self.project, "team": self.team, "tenant": TENANT_LEVEL}[
            level
        ]

    def levels(self) -> list[tuple[str, str, OrgUnit | None]]:
        """`(level, owner, unit)` in cascade order; the team only when there is one."""
        return [(lv, self.owner(lv) or "", self.units.get(lv)) for lv in ORG_LEVELS if self.owner(lv)]

    def config(self, level: str) -> LlmConfig | None:
        unit = self.units.get(level)
        return unit.llm if unit is not None else None


# -- the directory ----------------------------------------------------------------------------


class OrgDirectory:
    """The units of every tenant, from `org_units`, as an in-memory snapshot."""

    def __init__(self, db: Database, *, clock: Clock | None = None) -> None:
        self.db = db
        self.clock = clock or Clock()
        self._units: dict[tuple[str, str, str], OrgUnit] = {}
        self._file: dict[tuple[str, str, str], OrgUnit] = {}
        """The config file's units: this run's only, never stored; a stored unit of the same name wins."""
        self._watch = TableWatch(db, "SELECT COUNT(*), MAX(updated_at) FROM org_units", self.clock)
        self.version = 0
        """Bumped whenever the units change; caches built from them compare against it."""

    def use_file(self, units: Iterable[OrgUnit]) -> None:
        self._file = {(u.tenant, u.kind, u.name): u for u in units}
        self.version += 1

    def file_names(self, tenant: str, kind: str, name: str) -> bool:
        """Whether this run's config file declares the unit."""
        return (tenant, kind, TENANT_LEVEL if kind == "tenant" else name) in self._file

    async def refresh(self, *, max_age: float = 0.0) -> bool:
        return await self._watch.refresh(self._load, max_age)

    async def _load(self) -> None:
        rows = await self.db.fetchall("SELECT tenant, kind, name, team, teams, llm FROM org_units")
        units = {}
        for tenant, kind, name, team, teams, llm in rows:
            where = f"org_units.{tenant}.{kind}.{name}.llm"
            units[(tenant, kind, name)] = OrgUnit(
                tenant, kind, name, parse_llm_config(json.loads(llm), where), team, tuple(json.loads(teams))
            )
        self._units = units
        self.version += 1

    def unit(self, tenant: str, kind: str, name: str | None) -> OrgUnit | None:
        if name is None:
            return None
        key = (tenant, kind, TENANT_LEVEL if kind == "tenant" else name)
        return self._units.get(key) or self._file.get(key)

    def units(self, tenant: str | None = None, kind: str | None = None) -> list[OrgUnit]:
        return sorted(
            (
                u
                for u in {**self._file, **self._units}.values()
                if (tenant is None or u.tenant == tenant) and (kind is None or u.kind == kind)
            ),
            key=lambda u: (u.tenant, LISTING_ORDER[u.kind], u.name),
        )

    def scope(self, tenant: str, project: str, account: str, *, team: str | None = None) -> CallScope:
        """The call scope; the team is the project's team, else the account's only team."""
        project_unit = self.unit(tenant, "project", project) if project != TENANT_LEVEL else None
        account_unit = self.unit(tenant, "account", account)
        if team is None and project_unit is not None and project_unit.team:
            team = project_unit.team
        if team is None and account_unit is not None and len(account_unit.teams) == 1:
            team = account_unit.teams[0]
        units = {
            "account": account_unit,
            "project": project_unit,
            "team": self.unit(tenant, "team", team),
            "tenant": self.unit(tenant, "tenant", TENANT_LEVEL),
        }
        return CallScope(tenant, project, account, team, units)

    async def upsert(self, unit: OrgUnit, *, origin: str = "admin") -> None:
        await self.db.execute(
            "INSERT INTO org_units (tenant, kind, name, team, teams, llm, origin, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, kind, name) DO UPDATE SET team = excluded.team, "
            "teams = excluded.teams, llm = excluded.llm, origin = excluded.origin, updated_at = excluded.updated_at",
            (
                unit.tenant,
                unit.kind,
                TENANT_LEVEL if unit.kind == "tenant" else unit.name,
                unit.team,
                json.dumps(list(unit.teams)),
                json.dumps(unit.llm.to_json(), sort_keys=True),
                origin,
                datetime.now(UTC).isoformat(),
            ),
        )

    async def delete(self, tenant: str, kind: str, name: str) -> bool:
        count = await self.db.execute(
            "DELETE FROM org_units WHERE tenant = ? AND kind = ? AND name = ?", (tenant, kind, name)
        )
        await self.refresh()
        return count > 0


async def sync_from_config(directory: OrgDirectory, config: ConfigFile, credentials: CredentialStore) -> int:
    """Check every unit the config file names and make them this run's file layer (the directory's
    units, the inline `api_key`s the credential store's); returns how many units it names."""
    await directory.refresh()
    await credentials.refresh()
    planned: list[tuple[OrgUnit, dict[str, Any]]] = []
    for tenant_name, tenant in config.tenants.items():
        base = f"tenants.{tenant_name}"
        planned.append((OrgUnit(tenant_name, "tenant", TENANT_LEVEL), _raw(tenant.llm, f"{base}.llm")))
        for name, team in tenant.teams.items():
            planned.append((OrgUnit(tenant_name, "team", name), _raw(team.llm, f"{base}.teams.{name}.llm")))
        for name, account in tenant.accounts.items():
            for team_name in account.teams:
                if team_name not in tenant.teams:
                    raise ConfigError(f"{base}.accounts.{name}.teams", f"unknown team {team_name!r}")
            planned.append(
                (
                    OrgUnit(tenant_name, "account", name, teams=tuple(account.teams)),
                    _raw(account.llm, f"{base}.accounts.{name}.llm"),
                )
            )
        for name, project in tenant.projects.items():
            if project.team and project.team not in tenant.teams:
                raise ConfigError(f"{base}.projects.{name}.team", f"unknown team {project.team!r}")
            planned.append(
                (
                    OrgUnit(tenant_name, "project", name, team=project.team),
                    _raw(project.llm, f"{base}.projects.{name}.llm"),
                )
            )
    units: list[OrgUnit] = []
    keys: dict[tuple[str, str, str | None, str], str] = {}
    for unit, raw in planned:
        raw = _inline_keys(unit, raw, keys)
        units.append(
            OrgUnit(unit.tenant, unit.kind, unit.name, parse_llm_config(raw, "llm"), unit.team, unit.teams)
        )
    credentials.use_file(keys)
    directory.use_file(units)
    return len(units)


def _raw(llm: Mapping[str, Any], where: str) -> dict[str, Any]:
    parse_llm_config(llm, where)  # check now, naming the path in the file
    return dict(llm)


def _inline_keys(
    unit: OrgUnit, raw: dict[str, Any], found: dict[tuple[str, str, str | None, str], str]
) -> dict[str, Any]:
    """`raw` with each provider entry's inline `api_key` replaced by an `api_key_ref` to the name it
    is kept under (`inline:<provider>:<position>` at the unit's level), collected into `found`."""
    providers = raw.get("providers") or []
    if not providers:
        return raw
    owner = None if unit.kind == "tenant" else unit.name
    out = []
    for i, entry in enumerate(providers):
        entry = dict(entry) if isinstance(entry, Mapping) else entry
        key = entry.pop("api_key", None) if isinstance(entry, dict) else None
        if key:
            name = f"inline:{PROVIDER_ALIASES.get(entry['provider'], entry['provider'])}:{i}"
            found[(unit.tenant, unit.kind, owner, name)] = str(key)
            entry["api_key_ref"] = name
        out.append(entry)
    return {**raw, "providers": out}


async def _seal_inline_keys(
    unit: OrgUnit, raw: dict[str, Any], credentials: CredentialStore
) -> dict[str, Any]:
    """The admin surface's inline keys: stored, sealed, in the credential store."""
    found: dict[tuple[str, str, str | None, str], str] = {}
    raw = _inline_keys(unit, raw, found)
    for (tenant, level, owner, name), key in found.items():
        current = credentials.get(tenant, level, owner, name)
        if current is None or current.reveal() != key:
            await credentials.set(tenant, level, owner, name, key, origin="admin")
    return raw


async def admin_upsert(
    directory: OrgDirectory,
    credentials: CredentialStore,
    tenant: str,
    kind: str,
    name: str,
    llm: Mapping[str, Any],
    *,
    team: str | None = None,
    teams: tuple[str, ...] = (),
) -> str | None:
    """Create or replace one unit from the admin surface; returns the previous unit's origin
    (`config`: this run's config file declares it too, and the stored unit now wins over the file's)."""
    if kind not in ORG_LEVELS:
        raise ConfigError("kind", f"expected one of {', '.join(ORG_LEVELS)}, got {kind!r}")
    where = f"{kind} {name}.llm"
    parse_llm_config(llm, where)
    await directory.refresh()
    for team_name in ((team,) if team else ()) + tuple(teams):
        if directory.unit(tenant, "team", team_name) is None:
            raise ConfigError("team", f"tenant {tenant} has no team {team_name!r}")
    stored_name = TENANT_LEVEL if kind == "tenant" else name
    row = await directory.db.fetchone(
        "SELECT origin FROM org_units WHERE tenant = ? AND kind = ? AND name = ?", (tenant, kind, stored_name)
    )
    if row is None and directory.file_names(tenant, kind, stored_name):
        row = ("config",)
    unit = OrgUnit(tenant, kind, stored_name, team=team, teams=tuple(teams))
    raw = await _seal_inline_keys(unit, dict(llm), credentials)
    await directory.upsert(
        OrgUnit(tenant, kind, stored_name, parse_llm_config(raw, where), team, tuple(teams))
    )
    await directory.refresh()
    return row[0] if row else None


__all__ = [
    "CallScope",
    "FailoverPolicy",  # read here by llm/failover.py
    "OrgDirectory",
    "OrgUnit",
    "admin_upsert",
    "sync_from_config",
]

"""The credential store: API keys per tenant, team, account or project, encrypted at rest.

Envelope encryption (DESIGN §8): every tenant gets a random 256-bit data key, sealed by the
master key (`SecretBox`, AES-256-GCM) and stored in `credential_keys`; each credential is sealed
with its tenant's data key, bound by the associated data to `tenant/level/owner/name`, so a
ciphertext copied to another row (or tenant) does not open. Rotating the master key re-wraps the
data keys only (`rewrap`); credentials stay as they are.

    store = CredentialStore(db, box)
    await store.refresh()
    await store.set("acme", "account", "mike", "cred_mike_anthropic", "sk-ant-…")
    store.get("acme", "account", "mike", "cred_mike_anthropic")   # Secret('**********')
    store.list("acme")                                             # names and owners, never values

Reads come from an in-memory snapshot of the (sealed) rows, so lookups are synchronous and cost
no query — the search factory's `credential_lookup` hook is sync. `refresh(max_age=…)` reloads
when another process changed the table.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..config.keys import TENANT_LEVEL
from ..contract.camel_json import camel_json
from ..contract.clock import Clock
from ..contract.errors import InvalidRequestError
from ..contract.protocol import Secret
from ..storage.crypto import SecretBox
from ..storage.table_watch import TableWatch
from .levels import LISTING_ORDER, ORG_LEVELS

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..storage.db import Database


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$")


@dataclass(frozen=True, slots=True)
class CredentialInfo:
    """What `list` shows about a credential: where it lives, never its value."""

    tenant: str
    level: str
    owner: str
    name: str
    origin: str
    updated_at: str

    def to_json(self) -> dict[str, str]:
        return camel_json(self)


def check_level(level: str, owner: str | None) -> str:
    """Validate a level/owner pair; returns the stored owner ('_tenant' at the tenant level)."""
    if level not in ORG_LEVELS:
        raise InvalidRequestError("level", f"expected one of {', '.join(ORG_LEVELS)}, got {level!r}")
    if level == "tenant":
        return TENANT_LEVEL
    if not owner:
        article = "an" if level == "account" else "a"
        raise InvalidRequestError(level, f"{article} {level}-level credential needs the {level} name")
    return owner


def check_name(name: str) -> str:
    if not _NAME.match(name or ""):
        raise InvalidRequestError(
            "name", f"expected letters, digits and '_', '.', ':', '-' (at most 128), got {name!r}"
        )
    return name


def _aad(tenant: str, level: str, owner: str, name: str) -> bytes:
    return f"credential:{tenant}/{level}/{owner}/{name}".encode()


class CredentialStore:
    def __init__(self, db: Database, box: SecretBox, *, clock: Clock | None = None) -> None:
        self.db = db
        self.box = box
        self.clock = clock or Clock()
        """Times `refresh(max_age=…)`: how old the snapshot may be before the tables are checked."""
        self._rows: dict[tuple[str, str, str, str], tuple[str, str, str]] = {}
        """(tenant, level, owner, name) → (ciphertext, origin, updated_at)."""
        self._wrapped: dict[str, str] = {}
        self._keys: dict[str, SecretBox] = {}
        self._opened: dict[tuple[str, str, str, str], tuple[str, str | None, Secret]] = {}
        """(tenant, level, owner, name) → (ciphertext, wrapped data key, plaintext) opened from them."""
        self._watch = TableWatch(
            db,
            "SELECT COUNT(*), MAX(updated_at), (SELECT COUNT(*) FROM credential_keys) FROM credentials",
            self.clock,
        )
        self._tasks: set[asyncio.Task[bool]] = set()
        """Background reloads in flight (kept referenced until done)."""
        self.version = 0
        self._file: dict[tuple[str, str, str, str], Secret] = {}
        """The config file's inline keys: this run's only, in memory, never stored."""

    def use_file(self, keys: Mapping[tuple[str, str, str | None, str], str]) -> None:
        """Make `(tenant, level, owner, name) → value` the file layer (a stored credential wins)."""
        self._file = {
            (t, lv, TENANT_LEVEL if lv == "tenant" else (o or ""), n): Secret(v)
            for (t, lv, o, n), v in keys.items()
        }
        self.version += 1

    # -- snapshot -----------------------------------------------------------------------------

    async def refresh(self, *, max_age: float = 0.0) -> bool:
        """Reload the snapshot if the tables changed; True when it did."""
        return await self._watch.refresh(self._load, max_age)

    async def _load(self) -> None:
        rows = await self.db.fetchall(
            "SELECT tenant, level, owner, name, ciphertext, origin, updated_at FROM credentials"
        )
        keys = await self.db.fetchall("SELECT tenant, wrapped_key FROM credential_keys")
        self._rows = {(t, lv, o, n): (c, origin, u) for t, lv, o, n, c, origin, u in rows}
        self._opened = {}  # a deleted credential's plaintext does not outlive its row
        wrapped: dict[str, str] = dict(keys)
        if wrapped != self._wrapped:
            self._keys = {t: k for t, k in self._keys.items() if wrapped.get(t) == self._wrapped.get(t)}
        self._wrapped = wrapped
        self.version += 1

    # -- reads --------------------------------------------------------------------------------

    def get(self, tenant: str, level: str, owner: str | None, name: str) -> Secret | None:
        """The credential `name` at exactly this level, or None."""
        stored_owner = TENANT_LEVEL if level == "tenant" else (owner or "")
        key = (tenant, level, stored_owner, name)
        row = self._rows.get(key)
        if row is None:
            return self._file.get(key)
        # An LLM call looks its keys up several times (primary, fallbacks): each AES-GCM open is
        # done once per stored value. The plaintext is kept only while both the row's ciphertext
        # and the tenant's wrapped data key are the ones it was opened from (the process already
        # holds the opened data key that would open it again).
        wrapped = self._wrapped.get(tenant)
        opened = self._opened.get(key)
        if opened is not None and opened[0] == row[0] and opened[1] == wrapped:
            return opened[2]
        box = self._data_key(tenant)
        secret = Secret(box.open(row[0], aad=_aad(tenant, level, stored_owner, name)))
        self._opened[key] = (row[0], wrapped, secret)
        return secret

    def find(
        self, tenant: str, chain: Iterable[tuple[str, str | None]], name: str
    ) -> tuple[Secret, str] | None:
        """The first `(level, owner)` of `chain` holding `name`: `(secret, level)`, or None."""
        for level, owner in chain:
            if level != "tenant" and not owner:
                continue
            secret = self.get(tenant, level, owner, name)
            if secret:
                return secret, level
        return None

    def list(self, tenant: str | None = None) -> list[CredentialInfo]:
        out = [
            CredentialInfo(t, lv, o, n, origin, updated)
            for (t, lv, o, n), (_, origin, updated) in self._rows.items()
            if tenant is None or t == tenant
        ]
        out += [
            CredentialInfo(t, lv, o, n, "config file", "")
            for (t, lv, o, n) in self._file
            if (tenant is None or t == tenant) and (t, lv, o, n) not in self._rows
        ]
        return sorted(out, key=lambda c: (c.tenant, LISTING_ORDER[c.level], c.owner, c.name))

    def search_lookup(self, scope: SearchScope, name: str, env_key: str | None = None) -> Secret | None:
        """`ProviderFactory(credential_lookup=…)`: a project credential, then a tenant one, named like
        the endpoint or protocol (`serper`), `<NAME>_API_KEY`, or the operator variable the protocol
        declares (`env_key`: PubMed's `NCBI_API_KEY`; the loomcycle seed stores `SERPER_API_KEY`).

        The hook is synchronous, so it reads the snapshot; a snapshot older than a few seconds is
        reloaded in the background for the next build (another process may have set a key)."""
        self._refresh_soon()
        names = [name, f"{name.upper().replace('-', '_')}_API_KEY"]
        if env_key:
            names.append(env_key)
        chain = (
            [("project", scope.project), ("tenant", None)]
            if scope.project != TENANT_LEVEL
            else [("tenant", None)]
        )
        for candidate in dict.fromkeys(names):
            found = self.find(scope.tenant, chain, candidate)
            if found:
                return found[0]
        return None

    def _refresh_soon(self, max_age: float = 5.0) -> None:
        if self.clock.monotonic() - self._watch.checked_at < max_age:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._watch.checked_at = self.clock.monotonic()  # one reload at a time
        task = loop.create_task(self._quiet_refresh())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _quiet_refresh(self) -> bool:
        try:
            return await self.refresh()
        except Exception:  # the database went away (shutdown): the next lookup tries again
            self._watch.checked_at = 0.0
            return False

    # -- writes -------------------------------------------------------------------------------

    async def set(
        self, tenant: str, level: str, owner: str | None, name: str, value: str, *, origin: str = "cli"
    ) -> CredentialInfo:
        stored_owner = check_level(level, owner)
        check_name(name)
        if not value:
            raise InvalidRequestError("value", "a credential value must not be empty")
        now = datetime.now(UTC).isoformat()
        async with self.db.transaction():
            box = await self._data_key_for_write(tenant)
            sealed = box.seal(value, aad=_aad(tenant, level, stored_owner, name))
            await self.db.execute(
                "INSERT INTO credentials (tenant, level, owner, name, ciphertext, origin, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, level, owner, name) DO UPDATE SET "
                "ciphertext = excluded.ciphertext, origin = excluded.origin, updated_at = excluded.updated_at",
                (tenant, level, stored_owner, name, sealed, origin, now, now),
            )
        await self.refresh()
        return CredentialInfo(tenant, level, stored_owner, name, origin, now)

    async def delete(self, tenant: str, level: str, owner: str | None, name: str) -> bool:
        stored_owner = check_level(level, owner)
        count = await self.db.execute(
            "DELETE FROM credentials WHERE tenant = ? AND level = ? AND owner = ? AND name = ?",
            (tenant, level, stored_owner, name),
        )
        await self.refresh()
        return count > 0

    async def rewrap(self, new_box: SecretBox) -> int:
        """Re-seal every tenant's data key under a new master key; returns how many were re-wrapped."""
        rows = await self.db.fetchall("SELECT tenant, wrapped_key FROM credential_keys")
        async with self.db.transaction():
            for tenant, wrapped in rows:
                raw = self.box.open_bytes(wrapped, aad=_dek_aad(tenant))
                await self.db.execute(
                    "UPDATE credential_keys SET wrapped_key = ?, master_fp = ? WHERE tenant = ?",
                    (new_box.seal(raw, aad=_dek_aad(tenant)), new_box.fingerprint, tenant),
                )
        self.box = new_box
        self._keys.clear()
        self._opened.clear()
        self._watch.loaded = None
        await self.refresh()
        return len(rows)

    # -- data keys ----------------------------------------------------------------------------

    def _data_key(self, tenant: str) -> SecretBox:
        box = self._keys.get(tenant)
        if box is None:
            wrapped = self._wrapped.get(tenant)
            if wrapped is None:
                raise InvalidRequestError("tenant", f"tenant {tenant!r} has no credential data key")
            box = SecretBox(self.box.open_bytes(wrapped, aad=_dek_aad(tenant)))
            self._keys[tenant] = box
        return box

    async def _data_key_for_write(self, tenant: str) -> SecretBox:
        row = await self.db.fetchone("SELECT wrapped_key FROM credential_keys WHERE tenant = ?", (tenant,))
        if row is None:
            wrapped = self.box.seal(secrets.token_bytes(32), aad=_dek_aad(tenant))
            await self.db.execute(
                "INSERT INTO credential_keys (tenant, wrapped_key, master_fp, created_at) VALUES (?, ?, ?, ?)",
                (tenant, wrapped, self.box.fingerprint, datetime.now(UTC).isoformat()),
            )
        else:
            wrapped = row[0]
        if self._wrapped.get(tenant) != wrapped:
            self._keys.pop(tenant, None)
            self._wrapped[tenant] = wrapped
        return self._data_key(tenant)


def credential_references(directory: Any) -> dict[tuple[str, str, str, str], list[str]]:
    """Which LLM provider entries of the org tree (`tenancy.accounts.Directory`) point at which
    credential, keyed `(tenant, level, owner, name)`; an entry's ref resolves at its own level, then
    at the tenant level (`zarniwoop credentials list`, `GET /v1/credentials`)."""
    out: dict[tuple[str, str, str, str], list[str]] = {}
    for unit in directory.units():
        owner = "_tenant" if unit.kind == "tenant" else unit.name
        for entry in unit.llm.providers:
            if not entry.api_key_ref:
                continue
            label = f"{unit.kind} {unit.name if unit.kind != 'tenant' else unit.tenant} → {entry.provider}"
            if entry.model:
                label += f":{entry.model}"
            for key in (
                (unit.tenant, unit.kind, owner, entry.api_key_ref),
                (unit.tenant, "tenant", "_tenant", entry.api_key_ref),
            ):
                out.setdefault(key, []).append(label)
    return out


def _dek_aad(tenant: str) -> bytes:
    return f"data-key:{tenant}".encode()

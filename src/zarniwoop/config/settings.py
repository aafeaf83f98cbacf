"""SettingService: typed flat keys per scope, resolved through the cascade (DESIGN §2).

    built-in defaults → (_system, _tenant) → (tenant, _tenant) → (tenant, project) → per-call overrides

The innermost level wins per key. Rows live in the database; a process keeps a snapshot in
memory and reloads it when another process (a CLI `settings set`, another replica) changed the
table — `refresh()` checks a cheap fingerprint first. PASSWORD values are sealed with the
`SecretBox` and only opened when asked for with `secret()`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

from ..contract.clock import Clock
from ..contract.errors import ConfigError, InvalidRequestError
from ..contract.protocol import Secret
from ..contract.query import SearchScope
from ..storage.table_watch import TableWatch
from .keys import OPERATOR_DENY_KEYS, SYSTEM_TENANT, TENANT_LEVEL, infer_type, is_valid_key

if TYPE_CHECKING:
    from ..storage.crypto import SecretBox
    from ..storage.db import Database

TYPES = ("STRING", "INT", "BOOL", "PASSWORD")
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
_N = TypeVar("_N", int, float)


@dataclass(frozen=True, slots=True)
class SettingRow:
    tenant: str
    project: str
    key: str
    type: str
    value: str  # sealed for PASSWORD
    seq: int = 0
    file: str | None = None
    """The config file this row comes from (in force for this run only), or None: stored."""

    @property
    def level(self) -> str:
        if self.tenant == "_builtin":
            return "builtin"
        if self.tenant == SYSTEM_TENANT:
            return "system"
        return "tenant" if self.project == TENANT_LEVEL else "project"


def coerce(key: str, value: object, type_: str) -> str:
    """Validate and normalise a value for its type; the error names the key and what was expected."""
    text = str(value).strip() if not isinstance(value, bool) else ("true" if value else "false")
    if type_ == "INT":
        try:
            return str(int(text))
        except ValueError:
            raise InvalidRequestError(key, f"expected an integer, got {text!r}") from None
    if type_ == "BOOL":
        lowered = text.lower()
        if lowered in _TRUE:
            return "true"
        if lowered in _FALSE:
            return "false"
        raise InvalidRequestError(key, f"expected true or false, got {text!r}")
    if type_ not in TYPES:
        raise InvalidRequestError("type", f"expected one of {', '.join(TYPES)}, got {type_!r}")
    return str(value)


class ScopedSettings:
    """The merged view of one scope. Cheap to build; read-only."""

    def __init__(
        self,
        merged: Mapping[str, SettingRow],
        box: SecretBox | None,
        scope: SearchScope,
        stacks: Mapping[str, tuple[SettingRow, ...]] | None = None,
    ) -> None:
        self._merged = merged
        self._box = box
        self.scope = scope
        self._stacks = stacks or {}

    def levels(self, key: str) -> tuple[SettingRow, ...]:
        """Every level's row of a ceiling key (`config/ceilings.py`: an endpoint's `quota.*` and
        `rateLimit.*`), outermost first — built-in, system, tenant, project; () for any other key."""
        return self._stacks.get(key, ())

    def __contains__(self, key: str) -> bool:
        return key in self._merged

    def __iter__(self) -> Iterator[str]:
        return iter(self._merged)

    def keys(self) -> Iterator[str]:
        return iter(self._merged)

    def row(self, key: str) -> SettingRow | None:
        return self._merged.get(key)

    def get(self, key: str, default: str | None = None) -> str | None:
        row = self._merged.get(key)
        if row is None:
            return default
        if row.type == "PASSWORD":
            secret = self.secret(key)
            return secret.reveal() if secret else default
        return row.value

    def secret(self, key: str) -> Secret | None:
        row = self._merged.get(key)
        if row is None or not row.value:
            return None
        if row.type != "PASSWORD" or self._box is None:
            return Secret(row.value)
        return Secret(self._box.open(row.value, aad=_aad(row.tenant, row.project, row.key)))

    def get_int(self, key: str, default: int) -> int:
        value = self._number(key, int, "an integer")
        return default if value is None else value

    def get_float(self, key: str, default: float | None) -> float | None:
        value = self._number(key, float, "a number")
        return default if value is None else value

    def _number(self, key: str, parse: Callable[[str], _N], expected: str) -> _N | None:
        """The key's value parsed, or None where it is not set."""
        raw = self.get(key)
        if raw is None or raw == "":
            return None
        try:
            return parse(raw)
        except ValueError:
            raise ConfigError(key, f"expected {expected}, got {raw!r}") from None

    def get_bool(self, key: str, default: bool) -> bool:
        raw = self.get(key)
        if raw is None or raw == "":
            return default
        lowered = raw.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ConfigError(key, f"expected true or false, got {raw!r}")

    def get_list(self, key: str) -> list[str]:
        raw = self.get(key) or ""
        return [part.strip() for part in raw.split(",") if part.strip()]

    def with_prefix(self, prefix: str) -> dict[str, str]:
        """Every key under `prefix` (prefix stripped), in settings order. Secrets stay sealed."""
        return {k[len(prefix) :]: r.value for k, r in self._merged.items() if k.startswith(prefix)}


_CEILING = re.compile(
    r"^research\.endpoint\.[^.]+\.(quota\.daily|quota\.monthly|rateLimit\.perSecond|rateLimit\.burst)$"
)


def is_ceiling_key(key: str) -> bool:
    """An endpoint's call budget or pace: on the operator's key, the operator's value is a ceiling."""
    return key.startswith("research.endpoint.") and _CEILING.match(key) is not None


def _aad(tenant: str, project: str, key: str) -> bytes:
    return f"setting:{tenant}/{project}/{key}".encode()


_SCOPED_CACHE_SIZE = 1024


def scopes_read_by(scope: SearchScope) -> list[tuple[str, str]]:
    """The `(tenant, project)` rows a scope reads, in the cascade's order: the system's, its tenant's,
    its own (a tenant scope reads two, the system scope one)."""
    read = [(SYSTEM_TENANT, TENANT_LEVEL)]
    if scope.tenant != SYSTEM_TENANT:
        read.append((scope.tenant, TENANT_LEVEL))
    if scope.project != TENANT_LEVEL:
        read.append((scope.tenant, scope.project))
    return read


class SettingService:
    """Reads and writes settings; resolves scopes. One per process."""

    def __init__(
        self, db: Database, box: SecretBox | None, builtins: Mapping[str, str], *, clock: Clock | None = None
    ) -> None:
        self.db = db
        self.box = box
        self._builtins = [
            SettingRow("_builtin", "_builtin", key, infer_type(key), value, seq=i)
            for i, (key, value) in enumerate(builtins.items())
        ]
        self._rows: dict[tuple[str, str], list[SettingRow]] = {}
        self.clock = clock or Clock()
        """Times `refresh(max_age=…)`: how old a snapshot may be before the table is checked again."""
        self._watch = TableWatch(
            db, "SELECT COUNT(*), COALESCE(MAX(seq), 0), MAX(updated_at) FROM settings", self.clock
        )
        self.version = 0
        """Bumped on every reload; caches built from settings compare against it."""
        self._scoped: dict[SearchScope, ScopedSettings] = {}
        """`scoped(scope)` without overrides, for the snapshot in `_rows` (emptied with it)."""
        self._file: dict[tuple[str, str], list[SettingRow]] = {}
        """The config file's layer: this process's run only, never written to the database."""

    def use_file(self, source: str, named: Iterable[tuple[str, str, str, object]]) -> None:
        """Make `(tenant, project, key, value)` the file layer: at each level it sits between the
        built-in defaults and what `settings set` wrote. A value of None names no value (an unset key
        variable). Secrets are sealed as stored ones are, so no reader sees a plain one."""
        rows = [(t, p, k, v) for t, p, k, v in named if v is not None]
        layer: dict[tuple[str, str], list[SettingRow]] = {}
        for index, (tenant, project, key, value) in enumerate(rows):
            if not is_valid_key(key):
                raise ConfigError(key, "expected a dotted setting key like research.default.web")
            kind = infer_type(key)
            text = coerce(key, value, kind)
            if kind == "PASSWORD" and text and self.box is not None:
                text = self.box.seal(text, aad=_aad(tenant, project, key))
            # Negative seqs: the file's keys come before stored ones, in the file's order (an
            # operator's endpoints are tried in the order they are written).
            row = SettingRow(tenant, project, key, kind, text, seq=index - len(rows), file=source)
            layer.setdefault((tenant, project), []).append(row)
        self._file = layer
        self._scoped = {}
        self.version += 1

    def file_row(self, tenant: str, project: str, key: str) -> SettingRow | None:
        """The file layer's row of `key` at this level, or None."""
        return next((r for r in self._file.get((tenant, project), ()) if r.key == key), None)

    async def refresh(self, *, max_age: float = 0.0) -> bool:
        """Reload the snapshot if the table changed; returns True when it did."""
        return await self._watch.refresh(self._load, max_age)

    async def _load(self) -> None:
        rows = await self.db.fetchall(
            "SELECT tenant, project, key, type, value, seq FROM settings ORDER BY seq"
        )
        grouped: dict[tuple[str, str], list[SettingRow]] = {}
        for tenant, project, key, type_, value, seq in rows:
            grouped.setdefault((tenant, project), []).append(
                SettingRow(tenant, project, key, type_, value, seq)
            )
        self._rows = grouped
        self._scoped = {}
        self.version += 1

    def scoped(self, scope: SearchScope, overrides: Mapping[str, str] | None = None) -> ScopedSettings:
        """The cascade for a scope. Configured keys come first in settings order, built-in ones last,
        so an operator's endpoints are tried before the built-in ones where no routing is set."""
        # A ScopedSettings is read-only and depends only on the snapshot: built once per scope and
        # snapshot, not merged and sorted again on every call and search (a refresh empties it).
        if not overrides:
            cached = self._scoped.get(scope)
            if cached is None:
                if len(self._scoped) >= _SCOPED_CACHE_SIZE:  # scopes named by callers: keep it bounded
                    self._scoped.clear()
                cached = self._scoped[scope] = self._merge(scope, None)
            return cached
        return self._merge(scope, overrides)

    def _merge(self, scope: SearchScope, overrides: Mapping[str, str] | None) -> ScopedSettings:
        merged: dict[str, SettingRow] = {}
        # Each level: the file's rows, then the stored ones over them.
        levels = [self._file.get(read, []) + self._rows.get(read, []) for read in scopes_read_by(scope)]
        # The operator's `operatorKeys: deny` is a floor: a tenant or project may deny for itself,
        # never allow what the operator denied (its row of the key is not merged over the system's).
        system = {r.key: r.value for r in levels[0] if r.key in OPERATOR_DENY_KEYS}  # the last row wins
        floor = {key for key, value in system.items() if value.strip().lower() == "deny"}
        for index, level in enumerate(levels):
            for row in level:
                if index and row.key in floor:
                    continue
                merged.pop(row.key, None)
                merged[row.key] = row
        for row in self._builtins:
            merged.setdefault(row.key, row)
        # The operator's limits are a ceiling (config/ceilings.py): keep every level's row of them.
        stacks: dict[str, tuple[SettingRow, ...]] = {}
        for level_rows in (self._builtins, *levels):
            for row in level_rows:
                if is_ceiling_key(row.key):
                    stacks[row.key] = (*stacks.get(row.key, ()), row)
        for key, value in (overrides or {}).items():
            merged[key] = SettingRow("_override", "_override", key, "STRING", str(value))
        # Re-sort: configured rows by seq (global insertion order), built-ins after them in their own order.
        ordered = sorted(merged.values(), key=lambda r: (r.tenant == "_builtin", r.seq))
        return ScopedSettings({r.key: r for r in ordered}, self.box, scope, stacks)

    async def set(
        self,
        tenant: str,
        project: str,
        key: str,
        value: object,
        type_: str | None = None,
        *,
        refresh: bool = True,
    ) -> SettingRow:
        """Write one setting; `refresh=False` leaves the snapshot as it was, for a caller writing many
        that refreshes once after them (the start-up seeding: one reload, not one per key)."""
        if not is_valid_key(key):
            raise InvalidRequestError(
                "key", f"expected a dotted setting key like research.default.web, got {key!r}"
            )
        kind = (type_ or infer_type(key)).upper()
        normalised = coerce(key, value, kind)
        stored = normalised
        if kind == "PASSWORD" and normalised:
            if self.box is None:
                raise ConfigError(key, "cannot store a PASSWORD setting without a master key")
            stored = self.box.seal(normalised, aad=_aad(tenant, project, key))
        now = datetime.now(UTC).isoformat()
        await self.db.execute(
            "INSERT INTO settings (tenant, project, key, type, value, updated_at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (tenant, project, key) DO UPDATE SET type = excluded.type, value = excluded.value, "
            "updated_at = excluded.updated_at",
            (tenant, project, key, kind, stored, now),
        )
        if refresh:
            await self.refresh()
        return SettingRow(tenant, project, key, kind, stored)

    async def delete(self, tenant: str, project: str, key: str) -> bool:
        count = await self.db.execute(
            "DELETE FROM settings WHERE tenant = ? AND project = ? AND key = ?", (tenant, project, key)
        )
        await self.refresh()
        return count > 0

    def invalidate(self) -> None:
        """Forget the snapshot; the next `refresh()` reloads (after a rolled-back transaction)."""
        self._watch.loaded = None
        self._rows = {}  # the file layer stays: it is not in the database
        self._scoped = {}

    def scoped_value(self, row: SettingRow) -> str:
        """The plain value of a stored row (PASSWORD rows opened)."""
        if row.type != "PASSWORD" or self.box is None or not row.value:
            return row.value
        return self.box.open(row.value, aad=_aad(row.tenant, row.project, row.key))

    def rows(self, tenant: str | None = None, project: str | None = None) -> list[SettingRow]:
        """The configured rows, the file's first (`file` set on them), then the stored ones."""
        out = [r for level in (*self._file.values(), *self._rows.values()) for r in level]
        if tenant is not None:
            out = [r for r in out if r.tenant == tenant]
        if project is not None:
            out = [r for r in out if r.project == project]
        return sorted(out, key=lambda r: r.seq)

    def builtin_rows(self) -> list[SettingRow]:
        return list(self._builtins)

    def scopes(self) -> list[SearchScope]:
        """Every (tenant, project) that has settings of its own, plus the default scope."""
        seen = {SearchScope("default", "default")}
        for tenant, project in (*self._file, *self._rows):
            if tenant != SYSTEM_TENANT:
                seen.add(SearchScope(tenant, project))
        return sorted(seen, key=lambda s: (s.tenant, s.project))

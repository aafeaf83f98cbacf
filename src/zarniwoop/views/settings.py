"""The effective settings of a scope, each with the level it comes from and its source — the body
of `zarniwoop settings list` and of the web console's `GET /v1/settings`.

Sources: `config file <path>` (this run's file, in force only while given), `settings set` (the database),
`built-in default`, `documented default` (a default nobody wrote down, `.timeoutMs` 8000). A
PASSWORD row never shows its value: the CLI prints `********`, the console gets `"set": true`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config.endpoints import endpoint_ids
from ..config.known_keys import ENDPOINT_SUFFIXES

if TYPE_CHECKING:
    from ..config.settings import SettingRow, SettingService
    from ..contract.query import SearchScope
    from ..storage.db import Database


def setting_source(row: SettingRow) -> str:
    if row.level == "builtin":
        return "built-in default"
    return f"config file {row.file}" if row.file else "settings set"


def effective_settings(
    settings: SettingService,
    scope: SearchScope,
    *,
    prefix: str = "",
    defaults: bool = False,
    masked: str | None = "********",
) -> list[dict[str, Any]]:
    """Every effective key under `prefix`: `{key, value, type, level, source}`; a secret's value is
    `masked` (None: no `value`, `"set": true` instead)."""
    scoped = settings.scoped(scope)
    out: list[dict[str, Any]] = []
    for key in scoped:
        row = scoped.row(key)
        if row is None or not key.startswith(prefix) or (row.level == "builtin" and not defaults):
            continue
        entry: dict[str, Any] = {"key": key}
        if row.type == "PASSWORD":
            entry.update({"value": masked} if masked is not None else {"set": bool(row.value)})
        else:
            entry["value"] = row.value
        entry.update(
            {
                "type": row.type,
                "level": row.level,
                "source": setting_source(row),
            }
        )
        out.append(entry)
    if defaults:  # per-endpoint defaults nobody wrote down (`.timeoutMs` 8000, …)
        for instance_id in endpoint_ids(scoped):
            for suffix in ENDPOINT_SUFFIXES:
                key = f"research.endpoint.{instance_id}.{suffix.pattern}"
                if suffix.default is not None and key not in scoped and key.startswith(prefix):
                    out.append(
                        {
                            "key": key,
                            "value": suffix.default,
                            "type": None,
                            "level": "default",
                            "source": "documented default",
                        }
                    )
    return out


async def settings_history(db: Database, scope: SearchScope, limit: int = 10) -> list[dict[str, Any]]:
    """The latest changes to the levels a scope reads (system, its tenant, itself), newest first:
    `{at, by, tenant, project, keys, note}` — who wrote through the console, and which keys a config
    file stopped naming and were removed at start-up. Keys only, never a value."""
    levels = [("_system", "_tenant"), (scope.tenant, "_tenant"), (scope.tenant, scope.project)]
    where = " OR ".join("(tenant = ? AND project = ?)" for _ in levels)
    rows = await db.fetchall(
        f"SELECT at, token_id, tenant, project, keys, note FROM settings_changes WHERE {where} "
        "ORDER BY at DESC LIMIT ?",
        (*[part for level in levels for part in level], limit),
    )
    return [
        {"at": at, "by": by, "tenant": t, "project": p, "keys": keys.split(","), "note": note}
        for at, by, t, p, keys, note in rows
    ]


__all__ = ["effective_settings", "setting_source", "settings_history"]

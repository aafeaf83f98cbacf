"""The config file seeds the settings: the keys it names upserted, the ones it named at its last
start and names no more removed, the result validated — and kept only if valid (DESIGN §2)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.validate import validate_settings
from ..contract.errors import ConfigError
from ..llm.settings_check import check_llm_settings

if TYPE_CHECKING:
    from ..config.file import ConfigFile
    from ..config.settings import SettingService
    from ..contract.protocol import SearchProtocol

log = logging.getLogger(__name__)


def validate_all(settings: SettingService, protocols: Mapping[str, SearchProtocol]) -> list[ConfigError]:
    """Search settings and `ai.*` settings, every scope: the boot check and the `settings set` check."""
    from ..llm.validate import validate_ai_settings

    return (
        validate_settings(settings, protocols) + validate_ai_settings(settings) + check_llm_settings(settings)
    )


async def seed_settings(
    settings: SettingService, config: ConfigFile, protocols: dict[str, SearchProtocol]
) -> None:
    """Upsert the keys the file names, remove those it named at its last start and names no more,
    validate the result, and keep it only if valid."""
    async with settings.db.transaction():
        await settings.refresh()
        removed = await _forget_unnamed_keys(settings, config)
        for tenant, project, key, value in config.scoped_settings():
            if value is None:
                await settings.delete(tenant, project, key)
                continue
            existing = next((r for r in settings.rows(tenant, project) if r.key == key), None)
            if existing is not None and existing.type != "PASSWORD" and existing.value == _text(value):
                continue  # unchanged: keep updated_at, so other processes need not reload
            if (
                existing is not None
                and existing.type == "PASSWORD"
                and settings.scoped_value(existing) == _text(value)
            ):
                continue
            # compared above against the snapshot read before any write: each key appears once per scope
            await settings.set(tenant, project, key, value, refresh=False)
        await settings.refresh()
        errors = validate_all(settings, protocols)
        if errors:
            settings.invalidate()
            raise (
                errors[0]
                if len(errors) == 1
                else ConfigError(
                    errors[0].key,
                    errors[0].reason
                    + f" (and {len(errors) - 1} more: "
                    + "; ".join(e.message for e in errors[1:])
                    + ")",
                )
            )
    await settings.refresh()
    for tenant, project, key in removed:  # once: the next start no longer finds it in config_seeded
        log.warning(
            "%s no longer names %s (%s/%s), which it set at its last start: removed",
            config.path,
            key,
            tenant,
            project,
        )
    for note in config.notes:
        log.warning("%s: %s", config.path or "config", note)
    _warn_unknown_keys(config)


async def _forget_unnamed_keys(settings: SettingService, config: ConfigFile) -> list[tuple[str, str, str]]:
    """Delete the keys this config file wrote at its last start and no longer names, record the
    removal in `settings_changes` (`settings list` shows it), and remember what it names now.
    Only a file has a last start: a config given as a mapping (the Python API) names what it names."""
    if config.path is None:
        return []
    source = str(Path(config.path).resolve())
    db = settings.db
    named = {(t, p, k) for t, p, k, _ in config.scoped_settings()}
    before = {
        (t, p, k)
        for t, p, k in await db.fetchall(
            "SELECT tenant, project, key FROM config_seeded WHERE source = ?", (source,)
        )
    }
    removed = sorted(before - named)
    now = datetime.now(UTC).isoformat()
    for tenant, project, key in removed:
        if await settings.delete(tenant, project, key):
            await db.execute(
                "INSERT INTO settings_changes (at, token_id, tenant, project, keys, note) VALUES (?, ?, ?, ?, ?, ?)",
                (now, "config file", tenant, project, key, f"removed: {source} no longer names it"),
            )
        await db.execute(
            "DELETE FROM config_seeded WHERE source = ? AND tenant = ? AND project = ? AND key = ?",
            (source, tenant, project, key),
        )
    for tenant, project, key in sorted(named - before):
        await db.execute(
            "INSERT INTO config_seeded (source, tenant, project, key) VALUES (?, ?, ?, ?)",
            (source, tenant, project, key),
        )
    return removed


def _warn_unknown_keys(config: ConfigFile) -> None:
    """A key no documentation knows is most likely a typo: say so at start-up, with the nearest one."""
    from ..config.known_keys import known_key, nearest_key

    for _, _, key, _ in config.scoped_settings():
        if known_key(key) is None:
            near = nearest_key(key)
            log.warning(
                "%s: %s is not a known setting%s",
                config.path or "config",
                key,
                f"; did you mean {near}?" if near else "",
            )


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

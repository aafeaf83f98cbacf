"""The config file is a layer of the settings for the run that names it: its keys in force exactly
while it is given, the result validated — and refused if invalid (DESIGN §2). Nothing of it is
written to the database, so another run (another file, or none) never sees it."""

from __future__ import annotations

import logging
from collections.abc import Mapping
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
    """Make the file's keys this run's file layer (never written to the database: a run with another
    file, or none, does not see them), validate the result, and refuse it if invalid."""
    await settings.refresh()
    source = str(config.path) if config.path is not None else "the config"
    settings.use_file(source, config.scoped_settings())
    errors = validate_all(settings, protocols)
    if errors:
        settings.use_file(source, ())
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
    for row in settings.rows():
        if row.file is None and settings.file_row(row.tenant, row.project, row.key) is not None:
            log.warning(
                "%s names %s (%s/%s), but a value stored by `settings set` overrides it; "
                "`zarniwoop settings delete %s` at that level to use the file's",
                source,
                row.key,
                row.tenant,
                row.project,
                row.key,
            )
    for note in config.notes:
        log.warning("%s: %s", config.path or "config", note)
    _warn_unknown_keys(config)


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

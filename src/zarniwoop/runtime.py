"""The composition root: config file → database → settings → protocols → factory → dispatcher.

Surfaces (CLI, HTTP, MCP, the Python API) open one `Runtime` and share it.

    async with await Runtime.open(config_path="zarniwoop.yaml") as rt:
        result = await rt.dispatcher.search(SearchRequest.create("crispr", "academic"), SearchScope())
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .config.defaults import builtin_settings
from .config.factory import ProviderFactory
from .config.file import ConfigFile, load_config, parse_config
from .config.settings import SettingService
from .config.validate import validate_settings
from .contract.errors import ConfigError
from .dispatch.clock import Clock
from .dispatch.cooldown import SQLCooldownStore
from .dispatch.dispatcher import Dispatcher
from .protocols import load_protocols
from .storage.crypto import SecretBox
from .storage.db import Database, open_database
from .transport.http import HttpTransport

if TYPE_CHECKING:
    from .contract.protocol import SearchProtocol

log = logging.getLogger(__name__)


def default_home() -> Path:
    return Path(os.environ.get("ZARNIWOOP_HOME") or ".zarniwoop").expanduser()


@dataclass
class Runtime:
    home: Path
    config: ConfigFile
    db: Database
    box: SecretBox
    settings: SettingService
    protocols: dict[str, SearchProtocol]
    transport: HttpTransport
    factory: ProviderFactory
    dispatcher: Dispatcher
    clock: Clock
    extras: dict[str, Any] = field(default_factory=dict)
    """Services other layers attach (usage counter, LLM manager, …), by name."""

    @classmethod
    async def open(
        cls,
        config_path: str | Path | Mapping[str, Any] | None = None,
        *,
        home: str | Path | None = None,
        transport: HttpTransport | None = None,
        clock: Clock | None = None,
        protocols: Mapping[str, SearchProtocol] | None = None,
    ) -> Runtime:
        """Load and validate everything; a bad configuration raises `ConfigError` and writes nothing.

        `config_path` may also be the config as a mapping (the Python API's `config={…}`).
        `protocols` adds protocols beside the registered entry points (tests, embedding apps).
        """
        if config_path is None and os.environ.get("ZARNIWOOP_CONFIG"):
            config_path = os.environ["ZARNIWOOP_CONFIG"]
        config = parse_config(config_path) if isinstance(config_path, Mapping) else load_config(config_path)
        home_path = Path(home).expanduser() if home else default_home()
        created = _FreshFiles(home_path)
        db = open_database(config.database_url, home_path)
        try:
            await db.migrate()
            box = SecretBox.load(home_path)
            known = {**load_protocols(), **(protocols or {})}
            settings = SettingService(db, box, builtin_settings(known))
            await seed_settings(settings, config, known)
        except BaseException:
            await db.aclose()
            created.remove()  # a rejected configuration leaves nothing behind
            raise
        transport = transport or HttpTransport()
        clock = clock or Clock()
        factory = ProviderFactory(settings, known, transport)
        dispatcher = Dispatcher(factory, SQLCooldownStore(db), clock=clock)
        return cls(home_path, config, db, box, settings, known, transport, factory, dispatcher, clock)

    async def aclose(self) -> None:
        await self.factory.aclose()
        await self.transport.aclose()
        await self.db.aclose()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


async def seed_settings(
    settings: SettingService, config: ConfigFile, protocols: dict[str, SearchProtocol]
) -> None:
    """Upsert the keys the file names, validate the result, and keep it only if valid."""
    async with settings.db.transaction():
        await settings.refresh()
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
            await settings.set(tenant, project, key, value)
        await settings.refresh()
        errors = validate_settings(settings, protocols)
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


class _FreshFiles:
    """Remembers whether the home folder existed, so a failed first start can leave no trace."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.existed = home.exists()

    def remove(self) -> None:
        if not self.existed:
            import shutil

            shutil.rmtree(self.home, ignore_errors=True)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

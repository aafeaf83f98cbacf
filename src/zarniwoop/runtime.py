"""The composition root: config file → database → settings → protocols → factory → dispatcher.

Shared state: the embedded default keeps cooldowns and quota counters in the database and the
result cache and reachability in memory; with `redis_url` all four live in Redis, shared by
every replica. The usage counter (audit log) and the metrics observe every dispatch.

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

from .config import keys as K
from .config.defaults import builtin_settings
from .config.factory import ProviderFactory
from .config.file import ConfigFile, load_config, parse_config
from .config.settings import SettingService
from .config.validate import validate_settings
from .contract.errors import ConfigError
from .dispatch.clock import Clock
from .dispatch.cooldown import SQLCooldownStore
from .dispatch.dispatcher import Dispatcher, DispatchObserver
from .dispatch.quota import LocalQuotaGuard, SQLQuotaCounters
from .llm.accounts import OrgDirectory, sync_from_config
from .llm.credentials import CredentialStore
from .llm.settings_check import check_llm_settings
from .observability.metrics import MetricsObserver
from .protocols import load_protocols
from .storage.crypto import SecretBox
from .storage.db import Database, open_database
from .storage.usage import DEFAULT_RETENTION_DAYS, ZarniwoopUsageCounter
from .transport.http import HttpTransport

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .contract.protocol import SearchProtocol
    from .contract.query import SearchScope
    from .dispatch.redis_state import RedisState

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
    usage: ZarniwoopUsageCounter | None = None
    """The audit log writer (`research_call_records`)."""
    redis: RedisState | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    """Services other layers attach (LLM manager, …), by name."""

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
            # LLM side: tenant credentials (also the search factory's key lookup) and the org tree.
            credentials = CredentialStore(db, box)
            directory = OrgDirectory(db)
            await sync_from_config(directory, config, credentials)
            redis = await connect_redis(config)
        except BaseException:
            await db.aclose()
            created.remove()  # a rejected configuration leaves nothing behind
            raise
        transport = transport or HttpTransport()
        clock = clock or Clock()
        factory = ProviderFactory(
            settings,
            known,
            transport,
            credential_lookup=credentials.search_lookup,
            watch=(credentials,),
            home=home_path,
        )
        usage = ZarniwoopUsageCounter(
            db,
            home_path / "spool",
            retention_days=lambda scope: retention_days(settings, scope),
            now=clock.now,
            fsync=config.audit_fsync,
        )
        dispatcher = build_dispatcher(
            factory, db, settings, clock, redis, observers=[usage, MetricsObserver()]
        )
        usage.start()
        return cls(
            home_path,
            config,
            db,
            box,
            settings,
            known,
            transport,
            factory,
            dispatcher,
            clock,
            usage,
            redis,
            {"credentials": credentials, "org": directory},
        )

    async def aclose(self) -> None:
        # Services attached by other layers (catalog refresh loop, …) close first.
        for name, extra in list(self.extras.items()):
            close = getattr(extra, "aclose", None)
            if close is not None:
                try:
                    await close()
                except Exception:
                    log.exception("closing %s failed", name)
        if self.usage is not None:
            await self.usage.aclose()  # flush the audit spool while the database is still open
        await self.factory.aclose()
        await self.transport.aclose()
        if self.redis is not None:
            await self.redis.aclose()
        await self.db.aclose()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def validate_all(settings: SettingService, protocols: dict[str, SearchProtocol]) -> list[ConfigError]:
    """Search settings and `ai.*` settings, every scope: the boot check and the `settings set` check."""
    from .llm.validate import validate_ai_settings

    return (
        validate_settings(settings, protocols) + validate_ai_settings(settings) + check_llm_settings(settings)
    )


def build_dispatcher(
    factory: ProviderFactory,
    db: Database,
    settings: SettingService,
    clock: Clock,
    redis: RedisState | None,
    *,
    observers: Sequence[DispatchObserver] = (),
) -> Dispatcher:
    """The dispatcher over the embedded stores, or over Redis when one is configured."""
    if redis is None:
        return Dispatcher(
            factory,
            SQLCooldownStore(db),
            clock=clock,
            quota=LocalQuotaGuard(SQLQuotaCounters(db), settings, clock=clock),
            observers=observers,
        )
    from .dispatch.pacing import RateLimiter
    from .dispatch.quota import RedisQuotaCounters
    from .dispatch.redis_state import (
        RedisCooldownStore,
        RedisRateLimiter,
        RedisReachability,
        RedisResultCache,
    )

    return Dispatcher(
        factory,
        RedisCooldownStore(redis),
        clock=clock,
        limiter=RedisRateLimiter(redis, RateLimiter(clock)),
        cache=RedisResultCache(redis),
        quota=LocalQuotaGuard(RedisQuotaCounters(redis), settings, clock=clock),
        observers=observers,
        reachability=RedisReachability(redis),
    )


async def connect_redis(config: ConfigFile) -> RedisState | None:
    """The Redis of `redis_url`, checked at start-up (a wrong URL is a config error, exit 2)."""
    if not config.redis_url:
        return None
    try:
        from redis.exceptions import RedisError

        from .dispatch.redis_state import open_redis
    except ImportError as exc:
        raise ConfigError(
            "redis_url", "Redis needs the 'scale' extra: pip install 'zarniwoop[scale]'"
        ) from exc
    try:
        state = open_redis(config.redis_url, config.redis_prefix)
    except ValueError as exc:
        raise ConfigError("redis_url", f"expected redis://HOST:PORT/DB, got an invalid URL ({exc})") from None
    try:
        await state.client.ping()
    except (RedisError, OSError) as exc:
        await state.aclose()
        raise ConfigError("redis_url", f"cannot reach Redis: {type(exc).__name__}: {exc}") from None
    return state


def retention_days(settings: SettingService, scope: SearchScope) -> int:
    """`research.log.retentionDays` for a scope; a bad value keeps the default rather than everything."""
    try:
        days = settings.scoped(scope).get_int(K.LOG_RETENTION_DAYS, DEFAULT_RETENTION_DAYS)
    except ConfigError:
        log.warning(
            "%s is not a number; keeping audit records %d days", K.LOG_RETENTION_DAYS, DEFAULT_RETENTION_DAYS
        )
        return DEFAULT_RETENTION_DAYS
    return max(1, days)


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

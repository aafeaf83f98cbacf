"""The application container: config file → database → settings → protocols → factory → dispatcher,
and the services built from them on first use, each a typed attribute.

`Runtime.open()` is the one async builder; `aclose()` the one teardown. Everything a surface needs
hangs off it, typed: `dispatcher`, `settings`, `credentials`, `org`, `content` (content store),
`investigator`, `tokens`, `quota_ledger`, and — built lazily, because search-only commands never
pay for them — `await catalog()` and `await llm()`. Lower layers take their real collaborators
(db, settings, credentials, transport), never this container: only the surfaces, the Python API
and `operations.py` import it (import-linter keeps it so). What spans several components — usage
dashboards, the routing report, probes, project stops, catalog refresh and discovery, a server's
background loops — is in `operations.py`, the module the surfaces call; this one builds and owns.

Shared state: the embedded default keeps cooldowns and quota counters in the database and the
result cache and reachability in memory; with `redis_url` all four live in Redis, shared by
every replica. The usage counter (audit log) and the metrics observe every dispatch.

    async with await Runtime.open(config_path="zarniwoop.yaml") as rt:
        result = await rt.dispatcher.search(SearchRequest.create("crispr", "academic"), SearchScope())
        manager = await rt.llm()
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .config import keys as K
from .config.defaults import builtin_settings
from .config.file import ConfigFile, load_config, parse_config
from .config.settings import SettingService
from .config.validate import extras_warnings, validate_settings
from .contract.errors import ConfigError
from .contract.query import SearchScope
from .dispatch.cache import DEFAULT_MAX_BYTES as DEFAULT_CACHE_BYTES
from .dispatch.cache import MemoryResultCache, ResultCache, TieredResultCache
from .dispatch.cooldown import SQLCooldownStore
from .dispatch.dispatcher import Dispatcher, DispatchObserver
from .dispatch.factory import ProviderFactory
from .dispatch.flights import Flights
from .dispatch.quota import LocalQuotaGuard
from .ledger import LLM_USAGE, RESEARCH_CALLS, UsageLedger, ZarniwoopUsageCounter
from .limits.call_budgets import SQLCallBudgets
from .limits.clock import Clock
from .llm.settings_check import check_llm_settings
from .observability.metrics import MetricsObserver
from .protocols import checked_protocols, load_protocols
from .storage.crypto import SecretBox
from .storage.db import Database, open_database
from .storage.private import private_home
from .storage.retention import QUOTA_COUNTER_KEEP_DAYS, RetentionRule, iso_bound
from .tenancy.accounts import OrgDirectory, sync_from_config
from .tenancy.credentials import CredentialStore
from .transport.http import HttpTransport
from .transport.proxies import ProxySettings

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .content.store import ContentStore
    from .contract.protocol import SearchProtocol
    from .limits.redis_state import RedisState
    from .limits.token_budgets import TokenBudgets
    from .limits.windows import AdmissionWindows
    from .llm.catalog import Catalog
    from .llm.manager import LlmManager
    from .research.pipeline import Investigator
    from .tenancy.tokens import TokenStore
    from .views.providers import RoutingSection

log = logging.getLogger(__name__)


def default_home() -> Path:
    return Path(os.environ.get("ZARNIWOOP_HOME") or ".zarniwoop").expanduser()


@dataclass(eq=False)
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
    credentials: CredentialStore
    """Tenant and account API keys (encrypted); also the search factory's key lookup."""
    org: OrgDirectory
    """The tenant → team → account → project tree of the config file's `llm:` blocks."""
    usage: ZarniwoopUsageCounter | None = None
    """The audit log writer (`research_call_records`)."""
    redis: RedisState | None = None
    routing_sections: dict[str, RoutingSection] = field(default_factory=dict)
    """Blocks other components add to the routing view (`GET /v1/_routing`), by name."""
    _catalog: Catalog | None = field(default=None, init=False, repr=False)
    _llm: LlmManager | None = field(default=None, init=False, repr=False)
    _catalog_lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)
    _llm_lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)

    @classmethod
    async def open(
        cls,
        config_path: str | Path | Mapping[str, Any] | None = None,
        *,
        home: str | Path | None = None,
        transport: HttpTransport | None = None,
        clock: Clock | None = None,
        protocols: Mapping[str, SearchProtocol] | None = None,
        share_pacing: bool = False,
        processes: int = 1,
    ) -> Runtime:
        """Load and validate everything; a bad configuration raises `ConfigError` and writes nothing.

        `config_path` may also be the config as a mapping (the Python API's `config={…}`).
        `protocols` adds protocols beside the registered entry points (tests, embedding apps).
        `share_pacing`: pace through the database, for several processes serving together
        (`serve --workers N`; with Redis configured pacing is shared anyway). `processes`: how
        many serve together (N): the in-memory cache level of each takes 1/N of
        `research.cache.maxBytes`, so that together they stay within it.
        """
        if config_path is None and os.environ.get("ZARNIWOOP_CONFIG"):
            config_path = os.environ["ZARNIWOOP_CONFIG"]
        config = parse_config(config_path) if isinstance(config_path, Mapping) else load_config(config_path)
        home_path = Path(home).expanduser() if home else default_home()
        created = _FreshFiles(home_path)
        private_home(home_path)
        db = open_database(config.database_url, home_path)
        try:
            await db.migrate()
            box = SecretBox.load(home_path)
            known = {**load_protocols(), **checked_protocols(protocols or {})}
            settings = SettingService(db, box, builtin_settings(known))
            await seed_settings(settings, config, known)
            for warning in extras_warnings(settings, known):
                log.warning("%s", warning)
            # Tenant credentials (also the search factory's key lookup) and the org tree.
            credentials = CredentialStore(db, box)
            directory = OrgDirectory(db)
            await sync_from_config(directory, config, credentials)
            redis = await connect_redis(config)
        except BaseException:
            await db.aclose()
            created.remove()  # a rejected configuration leaves nothing behind
            raise
        proxies = ProxySettings.resolve(config.http.proxy, config.http.no_proxy, os.environ)
        transport = transport or HttpTransport(proxies=proxies)
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
            now=clock.now,
            fsync=config.audit_fsync,
        )
        dispatcher = build_dispatcher(
            factory,
            db,
            settings,
            clock,
            redis,
            observers=[usage, MetricsObserver()],
            share_pacing=share_pacing,
            home=home_path,
            processes=processes,
        )
        if dispatcher.flights is not None:  # before any search: another process's searches see this one
            await dispatcher.flights.join()
        usage.start()
        return cls(
            home=home_path,
            config=config,
            db=db,
            box=box,
            settings=settings,
            protocols=known,
            transport=transport,
            factory=factory,
            dispatcher=dispatcher,
            clock=clock,
            credentials=credentials,
            org=directory,
            usage=usage,
            redis=redis,
        )

    # -- services built on first use ------------------------------------------------------------
    # `cached_property` builds each once; the event loop runs one coroutine at a time between
    # awaits, and none of these builders awaits, so two concurrent first uses share one object.

    @cached_property
    def ledger(self) -> UsageLedger:
        """Both usage ledgers, their writers (`usage` and the LLM's) and every usage report (`ledger/`)."""
        return UsageLedger(self.db, self.usage)

    @cached_property
    def content(self) -> ContentStore:
        """The content store: hits' bodies into the project workspace, through the SSRF guard."""
        from .content.store import ContentStore

        return ContentStore(self.home, self.settings, self.factory, transport=self.transport)

    @cached_property
    def tokens(self) -> TokenStore:
        """The HTTP server's API tokens (stored hashed)."""
        from .tenancy.tokens import TokenStore

        return TokenStore(self.db)

    @cached_property
    def quota_ledger(self) -> TokenBudgets:
        """LLM token budgets at every level: Redis when `redis_url` is configured (replicas), else
        the database (SQLite or PostgreSQL) — either way one atomic step reserves every level."""
        if self.redis is not None:  # the runtime's one Redis pool and the deployment's key prefix
            from .limits.token_budgets_redis import RedisTokenBudgets

            return RedisTokenBudgets(self.redis, clock=self.clock)
        from .limits.token_budgets import SQLTokenBudgets

        return SQLTokenBudgets(self.db, clock=self.clock)

    @cached_property
    def investigator(self) -> Investigator:
        """The curated pipeline, with LLM strategies where a scope has an LLM, built-in ones otherwise."""
        from .research.factory import build_investigator

        return build_investigator(
            self.dispatcher,
            self.content,
            self.settings,
            self.org,
            llm=self.llm,
            factory=self.factory,
            documents=self.home / "documents",
        )

    async def catalog(self) -> Catalog:
        """The model catalog, bootstrapped and loaded on first use."""
        if self._catalog is None:
            async with self._catalog_lock:
                if self._catalog is None:
                    from .llm.catalog.lifecycle import open_catalog

                    self._catalog = await open_catalog(self.home / "documents")
        return self._catalog

    async def llm(self) -> LlmManager:
        """The LLM call path (search-only commands never pay for it)."""
        if self._llm is None:
            async with self._llm_lock:
                if self._llm is None:
                    from .llm.manager import LlmManager

                    self._llm = LlmManager(
                        rate=self._rate_limiter(),
                        db=self.db,
                        settings=self.settings,
                        credentials=self.credentials,
                        directory=self.org,
                        ledger=self.quota_ledger,
                        usage=self.ledger.llm,  # spooled with the provider calls when the database is away
                        http=self.transport,
                        catalog=self.catalog,
                    )
        return self._llm

    def _rate_limiter(self) -> AdmissionWindows:
        """Per-minute LLM limits: one window for every replica in Redis (`redis_url`), else one for
        every process on the database (the embedded default: separate CLI processes share it)."""
        from .limits.windows import LocalAdmissionWindows

        local = LocalAdmissionWindows(self.clock)
        if self.redis is not None:
            from .limits.windows_redis import RedisAdmissionWindows

            return RedisAdmissionWindows(self.redis, local)
        from .limits.windows_sql import SQLAdmissionWindows

        return SQLAdmissionWindows(self.db, clock=self.clock, fallback=local)

    async def aclose(self) -> None:
        # Lazily built services close first, while the database they write to is still open.
        # The LLM manager first: it flushes scheduled threshold webhooks over the shared pool.
        closers = (
            ("LLM manager", self._llm),
            ("catalog", self._catalog),
            ("content store", self.__dict__.get("content")),
        )
        for name, closer in closers:
            if closer is not None:
                try:
                    await closer.aclose()
                except Exception:
                    log.exception("closing the %s failed", name)
        if self.usage is not None:
            await self.usage.aclose()  # flush the audit spool while the database is still open
        await self.factory.aclose()
        await self.dispatcher.aclose()
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


def validate_all(settings: SettingService, protocols: Mapping[str, SearchProtocol]) -> list[ConfigError]:
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
    share_pacing: bool = False,
    home: Path | None = None,
    processes: int = 1,
) -> Dispatcher:
    """The dispatcher over the embedded stores, or over Redis when one is configured.
    `share_pacing`: the embedded stores' pacing goes through the database (several processes).
    `home`: the result cache's second level is a file there, shared by every process using it.
    `processes`: the workers serving together; each one's in-memory level gets its share of the
    bound (the shared level holds all of it)."""
    system = settings.scoped(SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL))
    max_bytes = max(0, system.get_int(K.CACHE_MAX_BYTES, DEFAULT_CACHE_BYTES))
    memory_bytes = max_bytes // max(1, processes)
    if redis is None:
        cache: ResultCache = MemoryResultCache(memory_bytes)
        flights = None
        if home is not None:
            from .dispatch.cache_sql import CACHE_FILE, SQLiteFlights, SQLiteResultCache

            shared = SQLiteResultCache(home / CACHE_FILE, max_bytes=max_bytes, now=clock.now)
            cache = TieredResultCache(MemoryResultCache(memory_bytes), shared)
            flights = Flights(SQLiteFlights(shared), clock)
        limiter = None
        if share_pacing:
            from .limits.pacing import LocalPacer
            from .limits.pacing_sql import SQLPacer

            limiter = SQLPacer(db, LocalPacer(clock))
        return Dispatcher(
            factory,
            SQLCooldownStore(db),
            clock=clock,
            limiter=limiter,
            cache=cache,
            quota=LocalQuotaGuard(SQLCallBudgets(db), settings, clock=clock),
            observers=observers,
            flights=flights,
        )
    from .dispatch.redis_stores import RedisCooldownStore, RedisFlights, RedisReachability, RedisResultCache
    from .limits.call_budgets import RedisCallBudgets
    from .limits.pacing import LocalPacer
    from .limits.pacing_redis import RedisPacer

    return Dispatcher(
        factory,
        RedisCooldownStore(redis),
        clock=clock,
        limiter=RedisPacer(redis, LocalPacer(clock)),
        cache=RedisResultCache(redis, max_bytes=max_bytes),
        quota=LocalQuotaGuard(RedisCallBudgets(redis), settings, clock=clock),
        observers=observers,
        reachability=RedisReachability(redis),
        flights=Flights(RedisFlights(redis), clock),
    )


async def connect_redis(config: ConfigFile) -> RedisState | None:
    """The Redis of `redis_url`, checked at start-up (a wrong URL is a config error, exit 2)."""
    if not config.redis_url:
        return None
    try:
        from redis.exceptions import RedisError

        from .limits.redis_state import open_redis
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
    key, keep = RESEARCH_CALLS.retention_key, RESEARCH_CALLS.default_retention_days
    try:
        days = settings.scoped(scope).get_int(key, keep)
    except ConfigError:
        log.warning("%s is not a number; keeping audit records %d days", key, keep)
        return keep
    return max(1, days)


def retention_rules(settings: SettingService) -> list[RetentionRule]:
    """What the one retention job deletes, with the days the settings give (read at each run):
    provider calls per scope (`research.log.retentionDays`, 30), LLM usage and its traces
    (`ai.usage.retentionDays`, system-wide, 90), quota windows past two months."""

    def llm_days(_: SearchScope) -> int:
        system = settings.scoped(SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL))
        return system.get_int(LLM_USAGE.retention_key, LLM_USAGE.default_retention_days)

    return [
        RetentionRule(
            RESEARCH_CALLS.name,
            RESEARCH_CALLS.time_column,
            days=lambda scope: retention_days(settings, scope),
            per_scope=True,
        ),
        RetentionRule(
            LLM_USAGE.name, LLM_USAGE.time_column, days=llm_days, bound=iso_bound, companions=("llm_traces",)
        ),
        RetentionRule("quota_counters", "updated_at", days=lambda _: QUOTA_COUNTER_KEEP_DAYS),
    ]


def retention_interval(settings: SettingService) -> float:
    """How often a server runs the retention job (`ai.usage.purgeIntervalSeconds`, default an hour)."""
    system = settings.scoped(SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL))
    return system.get_float(K.RETENTION_INTERVAL_SECONDS, 3600.0) or 3600.0


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
    from .config.known_keys import known_key, nearest_key

    for _, _, key, _ in config.scoped_settings():
        if known_key(key) is None:
            near = nearest_key(key)
            log.warning(
                "%s: %s is not a known setting%s",
                config.path or "config",
                key,
                f"; did you mean {near}?" if near else "",
            )


class _FreshFiles:
    """Remembers what the home folder held, so a refused start leaves no trace: a new home is removed
    whole; in an existing one, the database and key files this start created are removed."""

    OWN_FILES = (
        "zarniwoop.db",
        "zarniwoop.db-wal",
        "zarniwoop.db-shm",
        "zarniwoop.db-journal",
        "master.key",
    )

    def __init__(self, home: Path) -> None:
        self.home = home
        self.existed = home.exists()
        self.present = {name for name in self.OWN_FILES if (home / name).exists()} if self.existed else set()

    def remove(self) -> None:
        if not self.existed:
            shutil.rmtree(self.home, ignore_errors=True)
            return
        for name in self.OWN_FILES:
            if name not in self.present:
                (self.home / name).unlink(missing_ok=True)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

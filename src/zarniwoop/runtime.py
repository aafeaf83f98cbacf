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
every replica. The usage counter (audit log) and the metrics observe every dispatch. What it builds
from the config — the seeded settings, the dispatcher over its stores, the Redis connection, the
retention rules — is in `boot/`, one job a module.

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
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .boot.retention import retention_days, retention_interval, retention_rules
from .boot.search_side import build_dispatcher
from .boot.seeding import seed_settings, validate_all
from .boot.shared_state import connect_redis
from .boot.tracing import start_tracing
from .config.defaults import builtin_settings
from .config.file import ConfigFile, load_config, parse_config
from .config.settings import SettingService
from .config.validate import extras_warnings
from .contract.closing import ClosedOnExit
from .dispatch.dispatcher import Dispatcher
from .dispatch.factory import ProviderFactory
from .ledger import UsageLedger, ZarniwoopUsageCounter
from .limits.clock import Clock
from .protocols import checked_protocols, load_protocols
from .storage.crypto import SecretBox
from .storage.db import Database, open_database
from .storage.private import private_home
from .tenancy.accounts import OrgDirectory, sync_from_config
from .tenancy.credentials import CredentialStore
from .transport.http import HttpTransport
from .transport.proxies import ProxySettings

if TYPE_CHECKING:
    from .content.store import ContentStore
    from .contract.protocol import SearchProtocol
    from .limits.budgets import Budgets
    from .limits.redis_state import RedisState
    from .limits.windows import AdmissionWindows
    from .llm.catalog import Catalog
    from .llm.manager import LlmManager
    from .research.pipeline import Investigator
    from .tasks.store import TaskStore
    from .tenancy.tokens import TokenStore
    from .views.providers import RoutingSection

log = logging.getLogger(__name__)


def default_home() -> Path:
    return Path(os.environ.get("ZARNIWOOP_HOME") or ".zarniwoop").expanduser()


@dataclass(eq=False)
class Runtime(ClosedOnExit):
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
        start_tracing(config)
        home_path = Path(home).expanduser() if home else default_home()
        created = _FreshFiles(home_path)
        private_home(home_path)
        db = open_database(config.database_url, home_path)
        clock = clock or Clock()
        try:
            await db.migrate()
            box = SecretBox.load(home_path)
            known = {**load_protocols(), **checked_protocols(protocols or {})}
            settings = SettingService(db, box, builtin_settings(known), clock=clock)
            await seed_settings(settings, config, known)
            for warning in extras_warnings(settings, known):
                log.warning("%s", warning)
            # Tenant credentials (also the search factory's key lookup) and the org tree.
            credentials = CredentialStore(db, box, clock=clock)
            directory = OrgDirectory(db, clock=clock)
            await sync_from_config(directory, config, credentials)
            redis = await connect_redis(config)
        except BaseException:
            await db.aclose()
            created.remove()  # a rejected configuration leaves nothing behind
            raise
        proxies = ProxySettings.resolve(config.http.proxy, config.http.no_proxy, os.environ)
        transport = transport or HttpTransport(proxies=proxies)
        factory = ProviderFactory(
            settings,
            known,
            transport,
            credential_lookup=credentials.search_lookup,
            watch=(credentials,),
            home=home_path,
            clock=clock,
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
            observers=[usage],
            share_pacing=share_pacing,
            home=home_path,
            processes=processes,
            signer=box,
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
    def task_store(self) -> TaskStore:
        """Tasks (issue 45): tool calls that outlive their connection, any process answering."""
        from .tasks.store import TaskStore

        return TaskStore(self.db, self.box, self.clock)

    @cached_property
    def quota_ledger(self) -> Budgets:
        """LLM token budgets at every level: Redis when `redis_url` is configured (replicas), else
        the database (SQLite or PostgreSQL) — either way one atomic step reserves every level."""
        if self.redis is not None:  # the runtime's one Redis pool and the deployment's key prefix
            from .limits.budgets_redis import RedisBudgets

            return RedisBudgets(
                self.redis, clock=self.clock, what="token budgets", token_check=self.tokens.live
            )
        from .limits.budgets_sql import SQLBudgets

        return SQLBudgets(self.db, clock=self.clock, what="token budgets")

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
                        rate=self.rate_windows(),
                        db=self.db,
                        settings=self.settings,
                        credentials=self.credentials,
                        directory=self.org,
                        ledger=self.quota_ledger,
                        usage=self.ledger.llm,  # spooled with the provider calls when the database is away
                        http=self.transport,
                        catalog=self.catalog,
                        clock=self.clock,
                    )
        return self._llm

    def rate_windows(self) -> AdmissionWindows:
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


__all__ = [
    "Runtime",
    "build_dispatcher",
    "connect_redis",
    "default_home",
    "retention_days",
    "retention_interval",
    "retention_rules",
    "seed_settings",
    "validate_all",
]

"""The catalog's life in a process: open it (bundled bootstrap, first load), refresh it on a
timer, run discovery and refresh after it.

    catalog = await open_catalog(home / "documents")
    task = catalog.start_refresh_loop(refresh_seconds(settings))
    report = await discover_models(catalog, settings, http, SearchScope("acme", "review"))
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config.keys import SYSTEM_TENANT, TENANT_LEVEL
from ...config.settings import scopes_read_by
from ...contract.query import SearchScope
from .bootstrap import bootstrap_bundled
from .catalog import REFRESH_INTERVAL_SECONDS, Catalog
from .discovery import DEFAULT_TIMEOUT_SECONDS, discover, scopes_with_providers
from .documents import FileDocumentStore

if TYPE_CHECKING:
    from ...config.settings import SettingService
    from ...storage.db import Database
    from ...transport.http import HttpTransport

REFRESH_MINUTES_KEY = "ai.catalog.refreshMinutes"
DISCOVERY_INTERVAL_KEY = "ai.discovery.intervalMinutes"
DISCOVERY_TASK = "llm.discovery"
DISCOVERY_TIMEOUT_KEY = "ai.discovery.timeoutMs"
_SYSTEM = SearchScope(SYSTEM_TENANT, TENANT_LEVEL)
log = logging.getLogger(__name__)


async def open_catalog(documents_root: Path) -> Catalog:
    """The catalog over the document folder, with the bundled layer bootstrapped and loaded."""
    store = FileDocumentStore(documents_root)
    catalog = Catalog(store)
    await bootstrap_bundled(store, catalog.bundled)
    await catalog.refresh()
    return catalog


def refresh_seconds(settings: SettingService) -> int:
    """`ai.catalog.refreshMinutes` (default 30, at least 1) in seconds."""
    minutes = settings.scoped(_SYSTEM).get_int(REFRESH_MINUTES_KEY, REFRESH_INTERVAL_SECONDS // 60)
    return max(1, minutes) * 60


async def discover_models(
    catalog: Catalog,
    settings: SettingService,
    http: HttpTransport,
    scope: SearchScope | None,
    *,
    inherited: bool = False,
) -> dict[str, Any]:
    """Run discovery for one scope's own provider instances (None: every scope that has some) —
    with `inherited`, also those it reads from its tenant's and the system's settings, each listed
    into the scope that defines it — then refresh the catalog. Per-instance results and skipped
    instances with their errors, as JSON."""
    timeout = (
        settings.scoped(_SYSTEM).get_int(DISCOVERY_TIMEOUT_KEY, int(DEFAULT_TIMEOUT_SECONDS * 1000)) / 1000
    )
    own = None if scope is None else (scope.tenant, scope.project)
    scopes = None if own is None else [own]
    if scope is not None and inherited:
        # An instance the scope reads from above (the operator's `ai.provider.openai.baseUrl`) is one
        # its calls use: counted and listed too (issue 46: the console's "0 instances" beside a
        # working gateway). The scope's own row is reported even when it defines none.
        await settings.refresh()
        defining = set(scopes_with_providers(settings))
        scopes = [s for s in scopes_read_by(scope) if s in defining or s == own]
    report = await discover(settings, catalog.store, http, scopes, timeout=timeout)
    refreshed = await catalog.refresh()
    return {**report.to_json(), "refresh": refreshed.to_json()}


async def run_discovery_schedule(
    catalog: Callable[[], Awaitable[Catalog]],
    settings: SettingService,
    http: HttpTransport,
    db: Database,
    *,
    check_seconds: float = 60.0,
) -> None:
    """Scheduled discovery for a server: every `ai.discovery.intervalMinutes` (0 = off, re-read each
    minute), one run at a time across replicas — whoever claims the interval in `maintenance_runs`
    discovers every scope's instances; the others skip it."""
    from ...storage.retention import claim

    while True:
        minutes = settings.scoped(_SYSTEM).get_int(DISCOVERY_INTERVAL_KEY, 0)
        # a little less than the interval, so a replica's own clock drift never skips a run
        due = minutes > 0 and await claim(
            db, min_interval=minutes * 60 - 5, now=datetime.now(UTC), task=DISCOVERY_TASK
        )
        if due:
            try:
                report = await discover_models(await catalog(), settings, http, None)
                log.info("scheduled discovery: %s", report.get("summary", "done"))
            except Exception:
                log.exception("scheduled discovery failed; the catalog keeps what it has")
        await asyncio.sleep(min(check_seconds, minutes * 60) if minutes > 0 else check_seconds)

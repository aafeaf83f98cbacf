"""The catalog's life in a process: open it (bundled bootstrap, first load), refresh it on a
timer, run discovery and refresh after it.

    catalog = await open_catalog(home / "documents")
    task = catalog.start_refresh_loop(refresh_seconds(settings))
    report = await discover_models(catalog, settings, http, SearchScope("acme", "review"))
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config.keys import SYSTEM_TENANT, TENANT_LEVEL
from ...contract.query import SearchScope
from ..discovery import DEFAULT_TIMEOUT_SECONDS, discover
from .bootstrap import bootstrap_bundled
from .catalog import REFRESH_INTERVAL_SECONDS, Catalog
from .documents import FileDocumentStore

if TYPE_CHECKING:
    import httpx2

    from ...config.settings import SettingService

REFRESH_MINUTES_KEY = "ai.catalog.refreshMinutes"
DISCOVERY_TIMEOUT_KEY = "ai.discovery.timeoutMs"
_SYSTEM = SearchScope(SYSTEM_TENANT, TENANT_LEVEL)


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
    catalog: Catalog, settings: SettingService, http: httpx2.AsyncClient, scope: SearchScope | None
) -> dict[str, Any]:
    """Run discovery for one scope's own provider instances (None: every scope that has some), then
    refresh the catalog. Per-instance results and skipped instances with their errors, as JSON."""
    timeout = (
        settings.scoped(_SYSTEM).get_int(DISCOVERY_TIMEOUT_KEY, int(DEFAULT_TIMEOUT_SECONDS * 1000)) / 1000
    )
    scopes = None if scope is None else [(scope.tenant, scope.project)]
    report = await discover(settings, catalog.store, http, scopes, timeout=timeout)
    refreshed = await catalog.refresh()
    return {**report.to_json(), "refresh": refreshed.to_json()}

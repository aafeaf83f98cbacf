"""The LLM resolution services attached to a `Runtime`, created on first use.

Search-only commands never pay for the catalog: `get_catalog(runtime)` builds it the first time
something asks (bootstrap of the bundled documents, then the first load) and keeps it in
`runtime.extras["catalog"]`. The admin endpoints call `refresh_catalog` and `discover_models`;
a long-running server starts the 30-minute refresh with `start_catalog_refresh`.

    catalog = await get_catalog(runtime)
    doc = catalog.lookup("openai", "gpt-4o", SearchScope("acme", "review"))
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..config.keys import SYSTEM_TENANT, TENANT_LEVEL
from ..contract.query import SearchScope
from .catalog import Catalog, FileDocumentStore, bootstrap_bundled
from .catalog.catalog import REFRESH_INTERVAL_SECONDS
from .discovery import DEFAULT_TIMEOUT_SECONDS, discover

if TYPE_CHECKING:
    from ..runtime import Runtime

EXTRA_KEY = "catalog"
REFRESH_MINUTES_KEY = "ai.catalog.refreshMinutes"
DISCOVERY_TIMEOUT_KEY = "ai.discovery.timeoutMs"


def documents_root(runtime: Runtime) -> Any:
    return runtime.home / "documents"


async def get_catalog(runtime: Runtime) -> Catalog:
    """The runtime's model catalog, created, bootstrapped and loaded on first use."""
    found: Catalog | None = runtime.extras.get(EXTRA_KEY)  # `runtime.extras` is untyped: its slot's type
    if found is not None:
        return found
    lock = runtime.extras.setdefault("catalog.lock", asyncio.Lock())
    async with lock:
        found = runtime.extras.get(EXTRA_KEY)
        if found is None:
            store = FileDocumentStore(documents_root(runtime))
            catalog = Catalog(store)
            await bootstrap_bundled(store, catalog.bundled)
            await catalog.refresh()
            runtime.extras[EXTRA_KEY] = found = catalog
    return found


async def refresh_catalog(runtime: Runtime) -> dict[str, Any]:
    """Reload every layer now (synchronous swap); the refresh report as JSON (admin endpoint)."""
    catalog = await get_catalog(runtime)
    return (await catalog.refresh()).to_json()


async def discover_models(runtime: Runtime, scope: SearchScope | None) -> dict[str, Any]:
    """Run discovery for one scope's own provider instances (None: every scope that has some), then
    refresh the catalog. Per-instance results and skipped instances with their errors, as JSON."""
    catalog = await get_catalog(runtime)
    system = runtime.settings.scoped(SearchScope(SYSTEM_TENANT, TENANT_LEVEL))
    timeout = system.get_int(DISCOVERY_TIMEOUT_KEY, int(DEFAULT_TIMEOUT_SECONDS * 1000)) / 1000
    scopes = None if scope is None else [(scope.tenant, scope.project)]
    report = await discover(
        runtime.settings, catalog.store, runtime.transport.client, scopes, timeout=timeout
    )
    refreshed = await catalog.refresh()
    return {**report.to_json(), "refresh": refreshed.to_json()}


async def start_catalog_refresh(runtime: Runtime) -> asyncio.Task[None]:
    """Start the periodic refresh (every `ai.catalog.refreshMinutes`, default 30) for a server."""
    catalog = await get_catalog(runtime)
    system = runtime.settings.scoped(SearchScope(SYSTEM_TENANT, TENANT_LEVEL))
    minutes = system.get_int(REFRESH_MINUTES_KEY, REFRESH_INTERVAL_SECONDS // 60)
    return catalog.start_refresh_loop(max(1, minutes) * 60)


async def close_catalog(runtime: Runtime) -> None:
    """Stop the refresh loop, if one runs (call before `runtime.aclose()`)."""
    catalog = runtime.extras.get(EXTRA_KEY)
    if catalog is not None:
        await catalog.aclose()

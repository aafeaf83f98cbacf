"""Operations that span components: what a surface asks of several of the runtime's parts at once.

`runtime.py` builds and owns the components (database, settings, dispatcher, catalog, LLM path);
this module is what the surfaces — CLI, HTTP, MCP, the Python API — call when one request needs
more than one of them: the usage dashboards, the routing report, reachability probes, stopping a
project, refreshing and discovering the model catalog, and a server's background loops. Each is a
function of the `Runtime` it works on, so every surface says the same thing the same way; none
keeps state of its own.

    async with await Runtime.open("zarniwoop.yaml") as rt:
        view = await operations.routing_report(rt, SearchScope(), admin=True)
        await operations.stop_project(rt, SearchScope("acme", "review"))
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import shutil
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from .contract.query import SearchScope

if TYPE_CHECKING:
    from .dispatch.reachability import ProbeResult
    from .runtime import Runtime

log = logging.getLogger(__name__)


# -- model catalog ------------------------------------------------------------------------------


async def refresh_catalog(rt: Runtime, tenant: str | None = None) -> dict[str, Any]:
    """Reload every catalog layer now (or only `tenant`'s), by a synchronous swap; the refresh
    report as JSON (a tenant's refresh counts that tenant's documents alone)."""
    return (await (await rt.catalog()).refresh(tenant)).to_json()


async def discover_models(
    rt: Runtime, scope: SearchScope | None, *, inherited: bool = False
) -> dict[str, Any]:
    """Discovery for one scope's own provider instances (None: every scope that has some; with
    `inherited`, also those it reads from above), then a catalog refresh: per-instance results and
    skipped instances with their errors, as JSON."""
    from .llm.catalog.lifecycle import discover_models as discover

    return await discover(await rt.catalog(), rt.settings, rt.transport, scope, inherited=inherited)


async def start_catalog_refresh(rt: Runtime) -> asyncio.Task[None]:
    """Start the periodic refresh (every `ai.catalog.refreshMinutes`, default 30) for a server."""
    from .llm.catalog.lifecycle import refresh_seconds

    return (await rt.catalog()).start_refresh_loop(refresh_seconds(rt.settings))


# -- read models ------------------------------------------------------------------------------


async def usage_dashboard(
    rt: Runtime, tenant: str, *, account: str | None = None, project: str | None = None
) -> dict[str, Any]:
    """The body of `GET /v1/usage`'s `llm` and `zarniwoop llm usage --json` (seed 002 §9)."""
    await rt.org.refresh(max_age=1.0)
    return await rt.ledger.llm_dashboard(
        tenant, budgets=rt.quota_ledger, directory=rt.org, account=account, project=project
    )


async def research_usage(
    rt: Runtime, scope: SearchScope, *, since: float, until: float | None = None
) -> dict[str, Any]:
    """Provider calls, hits, failures, p50/p95 and quota per instance and modality (`zarniwoop usage`)."""
    from .views.usage import research_usage as usage

    return await usage(rt.ledger, rt.dispatcher, scope, since=since, until=until)


async def routing_report(
    rt: Runtime, scope: SearchScope, *, admin: bool, profile: str | None = None
) -> dict[str, Any]:
    """`GET /v1/_routing`: the search block, the LLM alias resolutions, the added sections (and
    an agent profile's cascades, `?profile=`)."""
    from .views.routing import routing_report as report

    return await report(
        rt.dispatcher,
        rt.settings,
        scope,
        admin=admin,
        sections=rt.routing_sections,
        catalog=await rt.catalog(),
        profile=profile,
    )


# -- reachability probes ------------------------------------------------------------------------


async def probe_providers(rt: Runtime, scope: SearchScope) -> dict[str, ProbeResult]:
    """One free reachability probe of each keyless endpoint of the scope (`providers --probe`)."""
    from .dispatch.probe import Prober

    return await Prober(rt.dispatcher).probe_scope(scope)


def start_probes(rt: Runtime) -> asyncio.Task[None]:
    """Probe keyless endpoints now and every `research.probe.intervalSeconds` (a server's loop)."""
    from .dispatch.probe import Prober

    return asyncio.get_running_loop().create_task(
        Prober(rt.dispatcher).run_forever(rt.settings.scopes), name="reachability-probes"
    )


# -- stopping a project -------------------------------------------------------------------------


async def stop_project(rt: Runtime, scope: SearchScope) -> int:
    """Dispose the scope's provider instances and delete its workspace; returns the count."""
    disposed = await rt.factory.dispose(scope)
    shutil.rmtree(rt.content.workspace(scope), ignore_errors=True)
    return disposed


async def request_project_stop(rt: Runtime, scope: SearchScope, *, wait: float = 5.0) -> int | None:
    """Ask running servers (any process on this database) to stop a project; how many instances
    the first one disposed, or None when none answered within `wait` seconds."""
    request_id = "stop_" + secrets.token_hex(8)
    await rt.db.execute(
        "INSERT INTO project_stops (id, tenant, project, requested_at) VALUES (?, ?, ?, ?)",
        (request_id, scope.tenant, scope.project, datetime.now(UTC).isoformat()),
    )
    deadline = rt.clock.monotonic() + wait
    while rt.clock.monotonic() < deadline:
        row = await rt.db.fetchone(
            "SELECT disposed FROM project_stops WHERE id = ? AND done_at IS NOT NULL", (request_id,)
        )
        if row is not None:
            return int(row[0])
        await rt.clock.sleep(0.2)  # the clock the deadline reads: a test's moves both
    return None


async def serve_project_stops(rt: Runtime, *, every: float = 1.0) -> None:
    """A server's loop: carry out the stop requests other processes wrote (`projects stop`).

    Every serving process carries out each request made while it runs — each worker of
    `serve --workers N` (and each replica) holds provider instances of its own — and the first
    marks it done; a request no server was running for is carried out by the next to start."""
    started = datetime.now(UTC)
    handled: set[str] = set()
    while True:
        try:
            since = max(started, datetime.now(UTC) - timedelta(minutes=10)).isoformat()
            rows = await rt.db.fetchall(
                "SELECT id, tenant, project FROM project_stops WHERE done_at IS NULL OR requested_at >= ? "
                "ORDER BY requested_at",
                (since,),
            )
            handled &= {row[0] for row in rows}  # forget requests past the window
            for request_id, tenant, project in rows:
                if request_id in handled:
                    continue
                disposed = await stop_project(rt, SearchScope(tenant, project))
                handled.add(request_id)
                await rt.db.execute(
                    "UPDATE project_stops SET done_at = ?, disposed = ? WHERE id = ? AND done_at IS NULL",
                    (datetime.now(UTC).isoformat(), disposed, request_id),
                )
        except Exception:
            log.exception("project stop requests could not be read; trying again")
        await asyncio.sleep(every)


# -- a server's background work -----------------------------------------------------------------


async def prune_if_due(rt: Runtime, *, min_interval: float) -> dict[str, int] | None:
    """The retention job, when no process on the database has run it within `min_interval`."""
    from .runtime import retention_rules
    from .storage.retention import prune_if_due

    return await prune_if_due(rt.db, retention_rules(rt.settings), min_interval=min_interval)


def start_retention(rt: Runtime) -> asyncio.Task[None]:
    """A server's retention job: at start, then every `ai.usage.purgeIntervalSeconds`."""
    from .runtime import retention_interval, retention_rules
    from .storage.retention import start_retention_loop

    return start_retention_loop(
        rt.db,
        lambda: retention_rules(rt.settings),
        interval=lambda: retention_interval(rt.settings),
        refresh=lambda: rt.settings.refresh(max_age=1.0),
    )


def start_background(rt: Runtime) -> list[asyncio.Task[None]]:
    """A server's periodic work besides probes and retention: stop requests from other processes
    and scheduled model discovery (`ai.discovery.intervalMinutes`)."""
    from .llm.catalog.lifecycle import run_discovery_schedule

    loop = asyncio.get_running_loop()
    return [
        loop.create_task(serve_project_stops(rt), name="project-stops"),
        loop.create_task(
            run_discovery_schedule(rt.catalog, rt.settings, rt.transport, rt.db),
            name="scheduled-discovery",
        ),
    ]


__all__ = [
    "discover_models",
    "probe_providers",
    "refresh_catalog",
    "request_project_stop",
    "research_usage",
    "routing_report",
    "serve_project_stops",
    "start_background",
    "start_catalog_refresh",
    "start_probes",
    "stop_project",
    "usage_dashboard",
]

"""The FastAPI app of `zarniwoop serve`: the HTTP API of DESIGN §6 and MCP at `/mcp`.

    app = create_app(runtime)                           # a runtime you opened (and will close)
    app = create_app(config="zarniwoop.yaml")           # the app opens and closes its own

The lifespan builds the toolbox and the token store, stops the MCP session managers (started at the
first `/mcp` request: `mcp_endpoint.LazyMCP`; a mounted sub-app's own lifespan would not run) and
runs the model catalog's periodic refresh. Every `/v1` route needs a bearer token;
`/healthz`, `/openapi.json` and the web UI's files (`/`, `/ui/*`: no data in them) do not. OpenAPI
documents the tools' input models as request bodies.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from ... import __version__, operations
from ...config import keys as K
from ...contract.query import SearchScope
from ...observability.tracing import TRACING
from ...tools.registry import Toolbox
from .allowed_hosts import host_check
from .answer_headers import AnswerHeaders
from .anthropic_wire import request_schemas as messages_schemas
from .errors import install_error_handlers
from .guard import RequestGuard
from .mcp_endpoint import LazyMCP, MCPEndpoint
from .openai_wire import request_schemas
from .responses_wire import request_schemas as responses_schemas
from .routes import ROUTERS
from .routes.embeddings import request_schemas as embeddings_schemas
from .state import AppState
from .trace_requests import trace_id_headers

if TYPE_CHECKING:
    from ...contract.protocol import SearchProtocol
    from ...runtime import Runtime


def create_app(
    runtime: Runtime | None = None,
    *,
    config: str | Path | Mapping[str, Any] | None = None,
    home: str | Path | None = None,
    protocols: Mapping[str, SearchProtocol] | None = None,
    bind_host: str = "127.0.0.1",
    admin_token: str | None = None,
    probes: bool = False,
    auth: str | None = None,
) -> FastAPI:
    """The app. With `runtime`, the caller owns it; otherwise the lifespan opens one from `config`.

    Args:
        bind_host: the address served on; on loopback the MCP transport checks `Host`/`Origin`
            against DNS rebinding (the names allowed: `allowed_hosts.py`).
        admin_token: an admin token valid only in this process (the one `serve` prints).
        probes: run the free reachability probes of keyless endpoints while serving (`serve` does).
        auth: `tokens` or `oauth` (`serve --auth`); None: the config file's `auth.mode`.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from ...runtime import Runtime

        owned = runtime is None
        rt = runtime or await Runtime.open(config, home=home, protocols=protocols)
        try:
            toolbox = Toolbox(rt)
            state = AppState(rt, toolbox, rt.tokens)
            if admin_token:
                state.add_ephemeral_admin(admin_token)
            if (auth or rt.config.auth.mode) == "oauth":
                from .oauth_install import install_oauth

                install_oauth(app, state, rt)
            # Stateless both ways (any replica or worker answers any request): SSE for a client that
            # accepts it (progress notifications, then the result), one JSON answer for the others.
            from ...tasks.runner import TaskRunner

            state.tasks = TaskRunner(rt.task_store, toolbox, rt.settings)
            state.tasks.start_sweeping()  # tasks whose process died are taken over here
            system = rt.settings.scoped(SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL))
            hosts = host_check(bind_host, rt.config.auth.resource, system.get_list(K.ALLOWED_HOSTS))
            mcp = LazyMCP(toolbox, hosts, state.tasks)
            state.mcp_sessions = mcp
            app.state.zarniwoop = state
            from ...storage.retention import stop_retention_loop

            await operations.start_catalog_refresh(rt)  # a long-running server keeps the model catalog fresh
            retention = operations.start_retention(rt)  # every ledger's retention, periodic
            # keyless endpoints' reachability, before anyone searches (`zarniwoop serve`; off in tests)
            prober = operations.start_probes(rt) if probes else None
            background = operations.start_background(
                rt
            )  # other processes' project stops, scheduled discovery
            try:
                yield
            finally:
                await state.tasks.aclose()  # its unfinished tasks go to another replica at once
                await mcp.aclose()
                await stop_retention_loop(retention)
                for task in background:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                if prober is not None:
                    prober.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await prober
                await (await rt.catalog()).aclose()  # stop the refresh loop
        finally:
            if owned:
                await rt.aclose()

    traced = runtime is None or TRACING.on  # a runtime opened without tracing never traces a request
    app = FastAPI(
        title="Zarniwoop",
        version=__version__,
        summary="One research/search layer for LLM agents: many providers, one cascade, traceable answers.",
        lifespan=lifespan,
        # FastAPI's /docs and /redoc pages load their JavaScript from a CDN, so behind a firewall
        # they are blank pages: off. The document itself is at /openapi.json.
        docs_url=None,
        redoc_url=None,
        # FastAPI's native telemetry opens the request's span (`trace_requests.py`); its HTTP metrics
        # and logs are not Zarniwoop's (those are `/metrics` and its own log lines). Each switch left
        # on costs every request a look-up of the global OpenTelemetry provider (issue 42).
        telemetry={"tracing": traced, "metrics": False, "logs": False},
    )
    install_error_handlers(app)
    app.add_middleware(RequestGuard)  # token before body, bodies capped (issue 11)
    app.add_middleware(AnswerHeaders, routes_of=app)  # Allow, and no-store on API answers
    if traced:  # a runtime opened without tracing: not even a pass-through
        app.add_middleware(trace_id_headers)  # outermost: a refused request says its trace too
    for router in ROUTERS:
        app.include_router(router)
    schemas = {**request_schemas(), **messages_schemas(), **responses_schemas(), **embeddings_schemas()}
    app.openapi = _with_components(app, schemas)  # type: ignore[method-assign]
    endpoint = MCPEndpoint()
    # Starlette serves an ASGI app given as a route endpoint (a non-function endpoint is called as
    # `app(scope, receive, send)`), but `add_route` annotates only request→response callables.
    app.add_route("/mcp", endpoint, include_in_schema=False)  # type: ignore[arg-type]
    app.add_route("/mcp/", endpoint, include_in_schema=False)  # type: ignore[arg-type]
    return app


def _with_components(app: FastAPI, schemas: Mapping[str, Any]) -> Any:
    """`app.openapi` with `schemas` among the top-level `components` (the gateway's request body is
    read by hand, so FastAPI does not see its model; its route refers to it by `$ref`)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = FastAPI.openapi(app)
            known = document.setdefault("components", {}).setdefault("schemas", {})
            clash = set(known) & set(schemas)
            assert not clash, f"OpenAPI component names used twice: {sorted(clash)}"
            known.update(schemas)
        return app.openapi_schema  # type: ignore[return-value]

    return openapi


__all__ = ["create_app"]

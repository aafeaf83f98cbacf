"""`zarniwoop serve`: the HTTP API, MCP at `/mcp`, under uvicorn.

With no API token configured, it serves on loopback only and prints an admin token valid for this
process (as Jupyter does); it refuses a non-loopback address until `zarniwoop tokens create` has
made one, unless `--auth oauth` lets callers sign in with an OAuth issuer's access tokens
(docs/oauth.md). fastapi, uvicorn and mcp are imported here, not at `zarniwoop --help`.

`--workers N` (N > 1) binds the socket here once and serves it from N worker processes
(`workers.py` the supervisor, `worker.py` a worker process; docs/workers.md).
"""

from __future__ import annotations

import asyncio
import gc
import ipaddress
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from .app import Exit, guarded

if TYPE_CHECKING:
    import uvicorn

GRACEFUL_SHUTDOWN_SECONDS = 5


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (non-loopback needs API tokens)."),
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="Port (0 = any free port)."),
    access_log: bool = typer.Option(False, "--access-log/--no-access-log", help="Log every request."),
    log_level: str = typer.Option("warning", "--log-level", help="debug, info, warning or error."),
    probes: bool = typer.Option(
        True,
        "--probes/--no-probes",
        help="Probe keyless providers' reachability (research.probe.intervalSeconds).",
    ),
    auth: str | None = typer.Option(
        None,
        "--auth",
        help="tokens (API tokens only) or oauth (OAuth 2.1 access tokens of the config file's "
        "auth.issuers as well); default: the config file's auth.mode. See docs/oauth.md.",
    ),
    workers: int = typer.Option(
        1,
        "--workers",
        help="Worker processes sharing the port (1 = serve in this process). Cooldowns, quotas and "
        "pacing are shared through the database or Redis; see docs/workers.md.",
    ),
) -> None:
    """Serve the web UI (open http://HOST:PORT/ in a browser), the HTTP API (OpenAPI at /openapi.json)
    and MCP (streamable HTTP at /mcp).

    On loopback with no token configured it prints a generated admin token: paste it into the web
    UI's sign-in box, or send it as `Authorization: Bearer <token>`."""
    g = ctx.obj
    if workers < 1:
        guarded(g, lambda: _refuse(f"--workers: expected a whole number of at least 1, got {workers}"))
    if auth not in (None, "tokens", "oauth"):
        guarded(g, lambda: _refuse(f"--auth: expected tokens or oauth, got {auth!r}"))

    async def main() -> None:
        from ...runtime import Runtime
        from ...tenancy.tokens import new_token

        runtime = await Runtime.open(g.config)
        try:
            mode = auth or runtime.config.auth.mode
            if mode == "oauth":  # a bad `auth:` block is a start-up error (exit 2), not every request's
                from ...tenancy.oauth import OAuthVerifier

                OAuthVerifier(runtime.config.auth, runtime.transport)
            admin_token = None
            if await runtime.tokens.active_count() == 0 and not (mode == "oauth" and not is_loopback(host)):
                if not is_loopback(host):
                    raise Exit(
                        2,
                        f"refusing to serve on {host} with no API token configured; create one first "
                        "(zarniwoop tokens create --tenant T --project P --role admin) or bind 127.0.0.1",
                    )
                admin_token = new_token()
            sock = _bind(host, port, reuse_port=workers > 1)
            url = _url(host, sock.getsockname()[1])
            if workers == 1:
                # the server stack loads only once the checks have passed
                from ..http import create_app

                app = create_app(runtime, bind_host=host, admin_token=admin_token, probes=probes, auth=mode)
                config = uvicorn_config(app, log_level=log_level, access_log=access_log)
                server = _announcing_server(
                    config, on_ready=lambda: _banner(url, g.tenant, g.project, admin_token)
                )
                try:
                    await server.serve(sockets=[sock])
                except SystemExit as exc:  # uvicorn exits like this when the app's startup fails
                    raise Exit(1, "the server failed to start; the log above says why") from exc
                return
        finally:
            await runtime.aclose()
        # --workers N: this process only supervises; each worker opens its own runtime and app.
        from .workers import WorkerSpec, supervise

        spec = WorkerSpec(
            config=g.config,
            tenant=g.tenant,
            project=g.project,
            debug=g.debug,
            host=host,
            admin_token=admin_token,
            log_level=log_level,
            access_log=access_log,
            probes=probes,
            workers=workers,
            auth=mode,
            log_format=g.log_format,
        )
        await supervise(sock, spec, on_ready=lambda: _banner(url, g.tenant, g.project, admin_token, workers))

    guarded(g, lambda: asyncio.run(main()))


def _refuse(message: str) -> None:
    raise Exit(2, message)


def uvicorn_config(app: Any, *, log_level: str, access_log: bool) -> uvicorn.Config:
    """The one place uvicorn's settings are chosen: the single-process server and every worker."""
    import uvicorn

    from ..http.guard import MAX_HEADER_BYTES
    from ..http.server_protocol import http_protocol

    return uvicorn.Config(
        app,
        log_level=log_level.lower(),
        access_log=access_log,
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        # httptools with a head cap of our own (server_protocol.py); h11 and its cap without it
        http=http_protocol(),
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
    )


GC_THRESHOLDS = (7000, 10, 10)
"""The collector's thresholds while serving: a young generation of 7,000 container objects instead
of Python's 700 (older generations as Python's). A search allocates thousands of short-lived
objects, freed by reference counting; with 700 the collector walked the young ones several times
per search (2.2 % of its instructions, `bench/instructions.py`). Cyclic garbage (rare on that path)
is found after at most 7,000 net allocations instead of 700."""


def _announcing_server(config: uvicorn.Config, on_ready: Callable[[], None]) -> uvicorn.Server:
    """uvicorn's server, announcing itself once it accepts connections."""
    import uvicorn

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if not self.should_exit:
                # What start-up built (modules, schemas, settings) lives as long as the process: out of
                # the collector's sight, a full collection no longer walks it (issue 18's profile).
                gc.freeze()
                gc.set_threshold(*GC_THRESHOLDS)
                on_ready()

    return AnnouncingServer(config)


def _bind(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """The server's socket, bound (uvicorn listens on it). `reuse_port` (`--workers N` on Linux): the
    port is shared with the workers' own sockets (`worker.listening_socket`), which the kernel hands
    connections to in turn; this one only holds the port and never listens.

    A port shared that way would also take a second server's SO_REUSEPORT sockets without a word,
    and the two would split the connections. So the port is first bound as a plain socket would
    bind it — a port in use is refused as it always was — and only then, closed, bound again with
    SO_REUSEPORT (a port 0 keeps the number the kernel picked)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)[
            0
        ]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        if reuse_port and REUSE_PORT:
            address = sock.getsockname()
            sock.close()
            sock = socket.socket(family, kind, proto)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind(address)
    except OSError as exc:
        raise Exit(2, f"cannot bind {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


REUSE_PORT = sys.platform == "linux" and hasattr(socket, "SO_REUSEPORT")
"""Linux spreads a port's connections over the sockets bound to it with SO_REUSEPORT; elsewhere the
option does not balance (or does not exist), and the workers share one listening socket."""


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


def _banner(url: str, tenant: str, project: str, admin_token: str | None, workers: int = 1) -> None:
    from ... import __version__

    lines = [
        f"Zarniwoop {__version__} serving on {url}",
        f"  HTTP API  {url}/v1/…   (OpenAPI: {url}/openapi.json)",
        f"  MCP       {url}/mcp    (streamable HTTP)",
        f"  Web UI    {url}/       (paste the token below into it)"
        if admin_token
        else f"  Web UI    {url}/       (sign in with an API token)",
    ]
    if workers > 1:
        lines.append(f"  Workers   {workers} processes share the port (docs/workers.md)")
    if admin_token:
        lines += [
            "  No API token is configured, so this admin token is valid while this process runs:",
            f"      {admin_token}",
            f"  e.g. curl -H 'Authorization: Bearer {admin_token}' {url}/v1/research/providers",
            f"  Tokens act on tenant/project {tenant}/{project} unless a request names another (?tenant=&project=).",
        ]
    lines.append("  Press Ctrl+C to stop.")
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()

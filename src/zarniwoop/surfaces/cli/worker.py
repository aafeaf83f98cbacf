"""A worker process of `zarniwoop serve --workers N` (`workers.py` starts and supervises them).

It reads its `WorkerSpec` as one JSON line on stdin, opens its own `Runtime` (pacing shared through
the database) and app, serves the inherited port with uvicorn (`listening_socket`: on Linux a socket
of its own, SO_REUSEPORT), and writes `READY <index> <pid>` on stdout once it accepts connections.
It reads its stdin to the end: when the parent dies — even by SIGKILL — the pipe closes and the
worker shuts down. A standby (index `STANDBY`) imports everything first, then waits on stdin for
the index of the worker it is to replace.

TCP_NODELAY: asyncio sets it on each accepted connection only when the listening socket object
says its protocol is TCP; a socket rebuilt from a bare descriptor with the wrong protocol would
not, and every small response would wait ~40 ms for a delayed ACK. `listening_socket` makes sure
of both the protocol and the option, so every connection of every worker has TCP_NODELAY.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
from dataclasses import asdict, dataclass, field
from typing import Any

from .app import Exit

READY = "zarniwoop-worker-ready"
"""The line a worker writes on stdout once it accepts connections: `READY <index> <pid>`."""
SIGNALS = (signal.SIGINT, signal.SIGTERM)
STANDBY = -1
"""The index a standby worker is started with: it imports everything, then waits on stdin for the
index of the worker it is to replace."""


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """What every worker needs to serve as `serve` would (one JSON line on the worker's stdin)."""

    config: str | None
    tenant: str
    project: str
    debug: bool
    host: str
    admin_token: str | None = field(repr=False)
    log_level: str
    access_log: bool
    probes: bool
    workers: int
    auth: str = "tokens"
    log_format: str = "auto"

    def line(self, index: int, fd: int) -> bytes:
        return json.dumps({"spec": asdict(self), "index": index, "fd": fd}).encode() + b"\n"

    @classmethod
    def parse(cls, line: bytes) -> tuple[WorkerSpec, int, int]:
        message = json.loads(line)
        return cls(**message["spec"]), int(message["index"]), int(message["fd"])


def listening_socket(fd: int) -> socket.socket:
    """The socket this worker listens on, as an object asyncio sets TCP_NODELAY on each accepted
    connection of (its protocol must say TCP); also set on the listener, which Linux copies.

    When the parent bound the port with SO_REUSEPORT (Linux), the worker binds a socket of its own
    to the same address: the kernel then spreads connections evenly over the workers' sockets. On
    one shared socket the worker that wins the accept race takes them all while it keeps up (a test
    saw 161 searches in 20 rounds go to one of two workers), which leaves the other core idle until
    the first saturates. Otherwise the inherited socket itself is the listener."""
    sock = socket.socket(fileno=fd)  # family, type and protocol read back from the descriptor
    inet = sock.family in (socket.AF_INET, socket.AF_INET6)
    if inet and hasattr(socket, "SO_REUSEPORT") and sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT):
        own = socket.socket(sock.family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if sock.family == socket.AF_INET6:
            v6only = sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY)
            own.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, v6only)
        own.bind(sock.getsockname())
        sock.close()  # this process's copy only: the parent's keeps holding the port
        sock = own
    if inet:
        if sock.proto != socket.IPPROTO_TCP:
            sock = socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, fileno=sock.detach())
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _StopFlag:
    """SIGTERM/SIGINT before uvicorn handles them (while the runtime opens), and the parent's death."""

    def __init__(self) -> None:
        self.requested = False
        self.server: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def set(self, *_: object) -> None:
        self.requested = True
        if self.server is not None:
            self.server.should_exit = True

    def watch_parent(self) -> None:
        """Read stdin to its end on a thread: the parent closed it or died. Then stop."""

        def read() -> None:
            with contextlib.suppress(OSError, ValueError):
                while sys.stdin.buffer.read(4096):
                    pass
            if self.loop is not None:
                with contextlib.suppress(RuntimeError):  # the loop already closed: we are done
                    self.loop.call_soon_threadsafe(self.set)

        threading.Thread(target=read, name="parent-watch", daemon=True).start()


async def _serve_worker(spec: WorkerSpec, index: int, fd: int, stop: _StopFlag) -> None:
    from ...observability.metrics import REGISTRY
    from ...runtime import Runtime

    stop.loop = asyncio.get_running_loop()
    stop.watch_parent()
    runtime = await Runtime.open(spec.config, share_pacing=True, processes=spec.workers)
    try:
        from prometheus_client import Gauge

        from ..http import create_app
        from .serve import _announcing_server, uvicorn_config

        Gauge(
            "zarniwoop_serve_worker_pid",
            "The process id of the `serve --workers` worker that answered this scrape (metrics are per worker).",
            ["worker"],
            registry=REGISTRY,
        ).labels(str(index)).set(os.getpid())
        sock = listening_socket(fd)
        app = create_app(
            runtime, bind_host=spec.host, admin_token=spec.admin_token, probes=spec.probes, auth=spec.auth
        )
        config = uvicorn_config(app, log_level=spec.log_level, access_log=spec.access_log)

        def ready() -> None:
            if stop.requested:
                server.should_exit = True
                return
            sys.stdout.write(f"{READY} {index} {os.getpid()}\n")
            sys.stdout.flush()

        server = _announcing_server(config, on_ready=ready)
        stop.server = server
        if stop.requested:
            return
        try:
            await server.serve(sockets=[sock])
        except SystemExit as exc:  # uvicorn exits like this when the app's startup fails
            raise Exit(1, f"worker {index} failed to start; the log above says why") from exc
    finally:
        await runtime.aclose()


def _warm_up() -> None:
    """What a worker imports before it serves (seconds of CPU on a busy machine), done by a standby
    before it is needed."""
    import prometheus_client  # noqa: F401
    import uvicorn  # noqa: F401

    from ...observability import metrics  # noqa: F401
    from ...runtime import Runtime  # noqa: F401
    from ..http import create_app  # noqa: F401
    from . import serve  # noqa: F401


def main() -> None:
    """The worker process (`WORKER_ENTRY`): its spec on stdin, the socket an inherited descriptor."""
    import typer

    from .app import Globals, guarded

    spec, index, fd = WorkerSpec.parse(sys.stdin.buffer.readline())
    stop = _StopFlag()
    # uvicorn handles both signals while it serves and raises them again when it is done: these
    # handlers take them before (a stop while the runtime opens) and after (a no-op, so the
    # runtime still closes and the audit spool is flushed).
    for sig in SIGNALS:
        signal.signal(sig, stop.set)
    if index == STANDBY:
        _warm_up()
        line = sys.stdin.buffer.readline()  # the index to take over; end of file: the parent stopped
        if not line.strip() or stop.requested:
            return
        index = int(line)
    g = Globals(spec.config, spec.tenant, spec.project, spec.debug, spec.log_format)
    from ...observability.logs import configure_logging

    configure_logging(spec.log_format, level=logging.DEBUG if spec.debug else logging.WARNING)  # type: ignore[arg-type]
    try:
        guarded(g, lambda: asyncio.run(_serve_worker(spec, index, fd, stop)))
    except typer.Exit as exc:
        sys.exit(exc.exit_code)


__all__ = ["READY", "SIGNALS", "STANDBY", "WorkerSpec", "listening_socket", "main"]

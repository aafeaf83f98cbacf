"""`zarniwoop serve --workers N`: N worker processes serving one port.

The parent (`supervise`) has already checked the configuration and tokens and bound the socket
(`serve._bind`). It starts N workers (`python -c WORKER_ENTRY`, calling `main` below), each in a
process group of its own, each inheriting the socket's descriptor and reading its `WorkerSpec`
as one JSON line on stdin — the printed admin token travels only there, never in argv, the
environment or a log. A worker opens its own `Runtime` (pacing shared through the database) and
app, serves the port with uvicorn (`listening_socket`: on Linux a socket of its own, SO_REUSEPORT),
and reports on stdout once it accepts connections. When every
worker has, the parent prints the banner, once. Afterwards it

- restarts a worker that dies (a warning on stderr; more than `MAX_RESTARTS` in a minute stops
  the server, exit 1), and
- on SIGINT or SIGTERM sends each worker SIGTERM (graceful: uvicorn's in-flight requests finish,
  the runtime flushes its audit spool), SIGKILLs any still running after the grace period, and
  exits 0.

A worker also reads its stdin to the end: when the parent dies — even by SIGKILL — the pipe
closes and the worker shuts down, so no worker outlives its server. The terminal's Ctrl+C reaches
the parent only (the workers' own process groups), which stops them in order.

TCP_NODELAY: asyncio sets it on each accepted connection only when the listening socket object
says its protocol is TCP; a socket rebuilt from a bare descriptor with the wrong protocol would
not, and every small response would wait ~40 ms for a delayed ACK. `listening_socket` makes sure
of both the protocol and the option, so every connection of every worker has TCP_NODELAY.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from .app import Exit

WORKER_ENTRY = "from zarniwoop.surfaces.cli.workers import main; main()"
"""What a worker runs (`-c`, not `-m`: the module is then imported once, under its own name)."""
READY = "zarniwoop-worker-ready"
"""The line a worker writes on stdout once it accepts connections: `READY <index> <pid>`."""
MAX_RESTARTS = 5
"""Worker restarts tolerated within a minute; past that the server stops (something is wrong)."""
STOP_GRACE_SECONDS = 10.0
"""How long stopping workers may take (uvicorn's graceful shutdown is 5 s) before SIGKILL."""
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
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

    def line(self, index: int, fd: int) -> bytes:
        return json.dumps({"spec": asdict(self), "index": index, "fd": fd}).encode() + b"\n"

    @classmethod
    def parse(cls, line: bytes) -> tuple[WorkerSpec, int, int]:
        message = json.loads(line)
        return cls(**message["spec"]), int(message["index"]), int(message["fd"])


# -- the parent ---------------------------------------------------------------------------------


@dataclass(eq=False)
class _Worker:
    index: int
    generation: int
    process: asyncio.subprocess.Process
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    ready: bool = False
    replaces: tuple[int, float] | None = None
    """(pid, monotonic time its exit was seen) of the dead worker this one replaces."""


class _Supervisor:
    def __init__(self, sock: socket.socket, spec: WorkerSpec, on_ready: Callable[[], None]) -> None:
        self.sock = sock
        self.spec = spec
        self.on_ready = on_ready
        self.events: asyncio.Queue[tuple[str, int, int]] = asyncio.Queue()
        """(kind, worker generation, exit code): `ready`, `exit`, or `stop` (a signal)."""
        self.workers: dict[int, _Worker] = {}
        self.standby: _Worker | None = None
        """Started once every worker serves: a process that has imported what a worker runs and
        waits for the index of a dead worker to take over (a cold start costs seconds of CPU)."""
        self.generations = 0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in _SIGNALS:
            loop.add_signal_handler(sig, self.events.put_nowait, ("stop", 0, 0))
        try:
            await self._supervise()
        finally:
            for sig in _SIGNALS:
                loop.remove_signal_handler(sig)
            await self._stop_all()
            self.sock.close()

    async def _supervise(self) -> None:
        for index in range(self.spec.workers):
            await self._start(index)
        announced = False
        restarts: collections.deque[float] = collections.deque()
        while True:
            kind, generation, code = await self.events.get()
            if kind == "stop":
                return
            standby = self.standby
            if standby is not None and standby.generation == generation:
                if kind == "exit":  # it died waiting: another one, counted as a restart
                    self.standby = None
                    self._count_restart(restarts)
                    await self._start_standby()
                continue
            worker = next((w for w in self.workers.values() if w.generation == generation), None)
            if worker is None:  # a late event of a worker already replaced
                continue
            if kind == "ready":
                worker.ready = True
                if worker.replaces is not None:
                    dead, since = worker.replaces
                    sys.stderr.write(
                        f"worker {worker.index} (pid {worker.process.pid}) accepts connections, "
                        f"{time.monotonic() - since:.2f} s after pid {dead} exited\n"
                    )
                    sys.stderr.flush()
                if not announced and all(w.ready for w in self.workers.values()):
                    announced = True
                    self.on_ready()
                if announced and self.standby is None:
                    await self._start_standby()
                continue
            if not announced:
                raise Exit(
                    1,
                    f"worker {worker.index} exited with code {code} while starting; the server failed "
                    "to start (the log above says why)",
                )
            now = self._count_restart(restarts)
            replaces = (worker.process.pid, now)
            standby, self.standby = self.standby, None
            taking_over = standby is not None and standby.process.returncode is None
            sys.stderr.write(
                f"warning: worker {worker.index} (pid {worker.process.pid}) exited with code {code}; "
                + ("its standby takes over\n" if taking_over else "starting another\n")
            )
            sys.stderr.flush()
            if standby is not None and taking_over:
                assert standby.process.stdin is not None
                standby.process.stdin.write(f"{worker.index}\n".encode())
                standby.index, standby.replaces = worker.index, replaces
                self.workers[worker.index] = standby
            else:
                await self._start(worker.index, replaces=replaces)

    def _count_restart(self, restarts: collections.deque[float]) -> float:
        now = time.monotonic()
        restarts.append(now)
        while restarts and restarts[0] < now - 60:
            restarts.popleft()
        if len(restarts) > MAX_RESTARTS:
            raise Exit(
                1,
                f"workers exited {len(restarts)} times within a minute; stopping (the log above says why)",
            )
        return now

    async def _start_standby(self) -> None:
        self.standby = await self._spawn(STANDBY)

    async def _start(self, index: int, replaces: tuple[int, float] | None = None) -> None:
        worker = await self._spawn(index)
        worker.replaces = replaces
        self.workers[index] = worker

    async def _spawn(self, index: int) -> _Worker:
        self.generations += 1
        fd = self.sock.fileno()
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WORKER_ENTRY,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            pass_fds=(fd,),
            process_group=0,  # the terminal's Ctrl+C is the parent's to handle
        )
        assert process.stdin is not None
        process.stdin.write(self.spec.line(index, fd))  # stdin stays open: its end is the parent's death
        worker = _Worker(index, self.generations, process)
        worker.tasks = [asyncio.create_task(self._pump(worker)), asyncio.create_task(self._watch(worker))]
        return worker

    async def _pump(self, worker: _Worker) -> None:
        """The worker's stdout: its ready line, and anything else passed on to ours."""
        assert worker.process.stdout is not None
        async for raw in worker.process.stdout:
            line = raw.decode(errors="replace")
            if line.startswith(READY):
                self.events.put_nowait(("ready", worker.generation, 0))
            else:
                sys.stdout.write(line)
                sys.stdout.flush()

    async def _watch(self, worker: _Worker) -> None:
        code = await worker.process.wait()
        self.events.put_nowait(("exit", worker.generation, code))

    async def _stop_all(self) -> None:
        workers = list(self.workers.values()) + ([self.standby] if self.standby is not None else [])
        for worker in workers:
            if worker.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    worker.process.send_signal(signal.SIGTERM)
            if worker.process.stdin is not None:
                worker.process.stdin.close()
        waits = [w.process.wait() for w in workers]
        try:
            await asyncio.wait_for(asyncio.gather(*waits), STOP_GRACE_SECONDS)
        except TimeoutError:
            for worker in workers:
                if worker.process.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        worker.process.kill()
            await asyncio.gather(*(w.process.wait() for w in workers))
        tasks = [task for w in workers for task in w.tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def supervise(sock: socket.socket, spec: WorkerSpec, *, on_ready: Callable[[], None]) -> None:
    """Serve `sock` from `spec.workers` worker processes until SIGINT/SIGTERM (module docstring).
    Raises `Exit(1)` when a worker fails to start or workers keep dying."""
    await _Supervisor(sock, spec, on_ready).run()


# -- a worker -----------------------------------------------------------------------------------


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
    for sig in _SIGNALS:
        signal.signal(sig, stop.set)
    if index == STANDBY:
        _warm_up()
        line = sys.stdin.buffer.readline()  # the index to take over; end of file: the parent stopped
        if not line.strip() or stop.requested:
            return
        index = int(line)
    g = Globals(spec.config, spec.tenant, spec.project, spec.debug)
    try:
        guarded(g, lambda: asyncio.run(_serve_worker(spec, index, fd, stop)))
    except typer.Exit as exc:
        sys.exit(exc.exit_code)


__all__ = ["MAX_RESTARTS", "READY", "WorkerSpec", "listening_socket", "supervise"]

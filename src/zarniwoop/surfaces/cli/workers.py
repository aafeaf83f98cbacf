"""`zarniwoop serve --workers N`: N worker processes serving one port.

The parent (`supervise`) has already checked the configuration and tokens and bound the socket
(`serve._bind`). It starts N workers (`python -c WORKER_ENTRY`, calling `worker.main`), each in a
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
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .app import Exit
from .worker import READY, SIGNALS, STANDBY, WorkerSpec, listening_socket

WORKER_ENTRY = "from zarniwoop.surfaces.cli.worker import main; main()"
"""What a worker runs (`-c`, not `-m`: the module is then imported once, under its own name)."""
MAX_RESTARTS = 5
"""Worker restarts tolerated within a minute; past that the server stops (something is wrong)."""
STOP_GRACE_SECONDS = 10.0
"""How long stopping workers may take (uvicorn's graceful shutdown is 5 s) before SIGKILL."""


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
        for sig in SIGNALS:
            loop.add_signal_handler(sig, self.events.put_nowait, ("stop", 0, 0))
        try:
            await self._supervise()
        finally:
            for sig in SIGNALS:
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


__all__ = ["MAX_RESTARTS", "READY", "WorkerSpec", "listening_socket", "supervise"]

"""Run `zarniwoop serve` as a real process (uvicorn on a loopback port) and read its banner.

    with served(config_path, home) as server:
        httpx.get(f"{server.url}/healthz")
        server.token            # the admin token it printed (None when tokens were configured)

Used by the surface tests and by `bench/http_load.py`.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .processes import starts_process

_URL = re.compile(r"serving on (http://\S+)")
_TOKEN = re.compile(r"^\s+(zw_[A-Za-z0-9_\-]+)\s*$")
READY_LINE = "Press Ctrl+C to stop."


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    token: str | None
    banner: str
    output: list[str]
    """Every stdout line so far (the banner's, and any after it), appended as they come."""

    @property
    def pid(self) -> int:
        return self.process.pid


def serve_command(*args: str, python_args: tuple[str, ...] = (), wrapper: tuple[str, ...] = ()) -> list[str]:
    """`python_args` go before `-m zarniwoop` (bench/profile_serve.py's profiler); `wrapper` before
    Python itself (`valgrind --tool=callgrind …`: bench/instructions.py)."""
    return [*wrapper, sys.executable, *python_args, "-m", "zarniwoop", *args]


def server_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZARNIWOOP_")}
    env.update({"ZARNIWOOP_HOME": str(home), "PYTHONUNBUFFERED": "1", **(extra or {})})
    return env


@starts_process
@contextmanager
def served(
    config: Path,
    home: Path,
    *extra_args: str,
    host: str = "127.0.0.1",
    port: int = 0,
    timeout: float = 180.0,
    env: Mapping[str, str] | None = None,
    probes: bool = False,
    python_args: tuple[str, ...] = (),
    wrapper: tuple[str, ...] = (),
) -> Iterator[Served]:
    """`timeout`: how long the banner may take — a guard against a server that never starts, not a
    speed check: under pytest-xdist on a busy 2-core machine a start took over 30 s (issue 24).
    `probes=False` (the default here): the server sends no reachability probes, so request logs
    hold only what a test caused — and a built-in endpoint a config left on is never contacted.
    `env`: extra variables for the server (e.g. a shared `ZARNIWOOP_MASTER_KEY` for replicas).
    `port`: 0 (the default) lets the system choose; a load balancer's backends need a fixed one,
    the same again when a replica is restarted."""
    probe_flag = "--probes" if probes else "--no-probes"
    command = serve_command(
        "--config",
        str(config),
        "serve",
        "--host",
        host,
        "--port",
        str(port),
        probe_flag,
        *extra_args,
        python_args=python_args,
        wrapper=wrapper,
    )
    home.mkdir(parents=True, exist_ok=True)
    log = home / "serve.stderr"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            command, env=server_env(home, env), stdout=subprocess.PIPE, stderr=stderr, text=True
        )
    try:
        output: list[str] = []
        banner = _read_banner(process, timeout, log, output)
        url = _URL.search(banner)
        token = next((m.group(1) for line in banner.splitlines() if (m := _TOKEN.match(line))), None)
        assert url is not None, banner
        yield Served(process, url.group(1), token, banner, output)
    finally:
        stop(process)


def _read_banner(
    process: subprocess.Popen[str], timeout: float, log: Path, output: list[str] | None = None
) -> str:
    """Lines of stdout up to the ready line, read on a thread (a pipe's readline would block);
    `output` receives every line, those after the banner too."""
    assert process.stdout is not None
    stdout = process.stdout
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:  # reads to EOF (the process ending), so the pipe never fills up
        with stdout:
            for line in stdout:
                if output is not None:
                    output.append(line)
                lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, name="serve-stdout", daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            break
        seen.append(line)
        if READY_LINE in line:
            return "".join(seen)
    stop(process)
    raise AssertionError(f"zarniwoop serve did not start: {''.join(seen)}{log.read_text()}")


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=60)


def rss_kib(pid: int) -> int:
    """Resident memory of a process, from /proc/<pid>/status (VmRSS, KiB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise LookupError(f"no VmRSS for pid {pid}")


def _stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name: [0] the state, [1] the parent's pid…"""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far, from /proc/<pid>/stat."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def has_exited(pid: int) -> bool:
    """Gone from /proc, or a zombie: its files (and sockets) are closed either way."""
    try:
        return _stat(pid)[0] == "Z"
    except OSError:
        return True


def child_pids(pid: int) -> list[int]:
    """The live children of a process (`serve --workers N`: its workers), from /proc."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = _stat(int(stat.parent.name))
        except OSError:  # it ended meanwhile
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return sorted(out)


def _tcp_sockets(state: str, port: int | None = None) -> set[str]:
    """The TCP sockets in `state` (/proc/net/tcp's hex code: 0A listening, 01 established), whose
    local port is `port` if given, as the links a process's /proc/<pid>/fd entries show."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(table).read_text().splitlines()[1:]:
                fields = row.split()
                if fields[3] == state and (port is None or int(fields[1].rsplit(":", 1)[1], 16) == port):
                    found.add(f"socket:[{fields[9]}]")
    return found


def _open_files(pid: int) -> set[str]:
    return {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}


def worker_pids(pid: int) -> list[int]:
    """The children of `serve --workers N` that serve: those holding a listening TCP socket (its
    standby, started once every worker serves, holds none until it takes a dead worker's place)."""
    listening = _tcp_sockets("0A")
    out = []
    for child in child_pids(pid):
        with contextlib.suppress(OSError):
            if _open_files(child) & listening:
                out.append(child)
    return out


def connections_held(pid: int, port: int) -> dict[int, int]:
    """How many established connections to `port` each serving worker of `serve --workers N`
    (`pid`) holds: the sockets whose local end is `port`, matched to the workers' open descriptors
    (the kernel, not the test, decides which worker accepts one). /proc/net/tcp is no snapshot: a
    row can be missed while other processes open and close sockets."""
    accepted = _tcp_sockets("01", port)
    held = {}
    for worker in worker_pids(pid):
        with contextlib.suppress(OSError):
            held[worker] = len(_open_files(worker) & accepted)
    return held


def standby_waiting(pid: int) -> bool:
    """Whether `serve --workers N` (`pid`) has a warm standby: a child not serving, blocked reading
    its stdin (fd 0) after its imports — from /proc/<child>/syscall (`read` is 0 on x86-64 Linux)."""
    serving = set(worker_pids(pid))
    for child in child_pids(pid):
        if child in serving:
            continue
        with contextlib.suppress(OSError):
            if Path(f"/proc/{child}/syscall").read_text().startswith("0 0x0 "):
                return True
    return False


def wait_for_standby(pid: int, timeout: float = 120.0) -> bool:
    """Until the standby is warm (its imports' CPU then no longer lands in what a bench measures)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if standby_waiting(pid):
            return True
        time.sleep(0.05)
    return False


def tree_cpu_seconds(pid: int) -> float:
    """CPU of a process and all its descendants: the live ones' own time, plus the children it
    has reaped (cutime/cstime: a restarted worker's), from /proc/<pid>/stat."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            fields = _stat(current)
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15]) / tick
        pending += child_pids(current)
    return total

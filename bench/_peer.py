"""`bench/gateway_overhead.py --peer litellm`: the gateway against LiteLLM's proxy, both real servers
behind the same concurrent clients and the same loopback upstream, in one run.

Four processes: this one (the clients, httpx), the emulated OpenAI upstream (its own process, so
it shares no GIL with the clients), a real `zarniwoop serve` (`prepare_unbound_gateway`: account
token, budgets at every level, usage rows) and LiteLLM's proxy (`bench/_litellm_proxy.py`). Three
targets: `bare` (the upstream itself), `gateway` and `litellm`. Each round calls each target `n`
times from `clients` at once, first plain calls then streamed ones, the bare upstream first and
the two servers in alternating order (gateway first in rounds 1 and 3), so that what else runs
on the machine falls on both alike. Per side:

- `addedLatencyP50Ms`: the p50 of a plain call's latency minus the bare upstream's (all rounds);
- `addedTtftP50Ms`: the same of a streamed call's time to first token (first delta with text);
- `cpuMsPerCall`: the utime + stime of the server's process tree (/proc) over its phases, plus
  `SETTLE_SECONDS` after each (what a call leaves to background tasks is its cost too), divided by
  its calls, plain and streamed together (each kind apart beside it). `idleCpuMsPerSecond` says
  what each server burns doing nothing (measured once, both idle), to read the settles by.

`ratios` divides the gateway's figure by LiteLLM's; `targets` are issue 42's (≤ 0.6, 0.6, 0.2).
The figures of each round stand in `rounds`, so a reader sees how far they move.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench._calls import Target, timed_calls
from bench._litellm_proxy import litellm_proxy, litellm_version, proxy_executable, venv_path
from bench.gateway_overhead import BODY, STREAM_BODY, prepare_unbound_gateway
from tests.support.gateway import OPENAI_KEY
from tests.support.served import served, tree_cpu_seconds

SIDES = ("gateway", "litellm")
KINDS = ("plain", "stream")
TARGETS = {"addedLatencyP50Ms": 0.6, "addedTtftP50Ms": 0.6, "cpuMsPerCall": 0.2}
SETTLE_SECONDS = 0.5
IDLE_SECONDS = 2.0
ROOT = Path(__file__).resolve().parents[1]


def _run_emulator(conn: Connection) -> None:
    from tests.support.emulator import Emulator
    from tests.support.gateway import openai_upstream, upstream_path

    emulator = Emulator().start()
    emulator.add(upstream_path("openai"), openai_upstream)
    conn.send(emulator.url)
    conn.recv()  # until the bench is done
    emulator.stop()


@contextmanager
def _upstream() -> Iterator[str]:
    """The emulated OpenAI upstream in a process of its own; its URL."""
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.Process(target=_run_emulator, args=(child,), daemon=True)
    process.start()
    try:
        yield parent.recv()
    finally:
        parent.send("stop")
        process.join(timeout=10)


class Samples:
    """What one run gathered: per target, kind and round, the call timings and server CPU seconds."""

    def __init__(self, rounds: int) -> None:
        names = ("bare", *SIDES)
        self.seconds = {t: {k: [[] for _ in range(rounds)] for k in KINDS} for t in names}
        self.cpu = {t: {k: [0.0] * rounds for k in KINDS} for t in SIDES}
        self.failures: list[str] = []
        """Calls the network failed (left out of the figures), as `target: error`."""
        self.idle = {t: 0.0 for t in SIDES}
        """Milliseconds of CPU per second each server spent idle, measured before the rounds."""

    def p50_ms(self, target: str, kind: str, round_: int | None = None) -> float:
        per_round = self.seconds[target][kind]
        values = per_round[round_] if round_ is not None else [s for r in per_round for s in r]
        return statistics.median(values) * 1000

    def cpu_ms_per_call(self, side: str, kinds: tuple[str, ...], round_: int | None = None) -> float:
        picked = [round_] if round_ is not None else range(len(self.cpu[side][KINDS[0]]))
        seconds = sum(self.cpu[side][k][r] for k in kinds for r in picked)
        calls = sum(len(self.seconds[side][k][r]) for k in kinds for r in picked)
        return seconds / calls * 1000

    def figures(self, round_: int | None = None) -> dict[str, Any]:
        """Per target its p50s; per server what it adds to the bare upstream and its CPU per call."""
        bare = {k: self.p50_ms("bare", k, round_) for k in KINDS}
        out: dict[str, Any] = {"bare": {"latencyP50Ms": _ms(bare["plain"]), "ttftP50Ms": _ms(bare["stream"])}}
        for side in SIDES:
            latency, ttft = self.p50_ms(side, "plain", round_), self.p50_ms(side, "stream", round_)
            out[side] = {
                "latencyP50Ms": _ms(latency),
                "ttftP50Ms": _ms(ttft),
                "addedLatencyP50Ms": _ms(latency - bare["plain"]),
                "addedTtftP50Ms": _ms(ttft - bare["stream"]),
                "cpuMsPerCall": _ms(self.cpu_ms_per_call(side, KINDS, round_)),
                "cpuMsPerPlainCall": _ms(self.cpu_ms_per_call(side, ("plain",), round_)),
                "cpuMsPerStreamedCall": _ms(self.cpu_ms_per_call(side, ("stream",), round_)),
            }
        out["ratios"] = {name: _ratio(out["gateway"][name], out["litellm"][name]) for name in TARGETS}
        return out


def _ms(value: float) -> float:
    return round(value, 3)


def _ratio(gateway: float, litellm: float) -> float | None:
    """gateway ÷ LiteLLM; None where LiteLLM's figure is not above 0 (a ratio would mean nothing)."""
    return round(gateway / litellm, 3) if litellm > 0 else None


async def _measure(
    targets: dict[str, Target], pids: dict[str, int], n: int, rounds: int, clients: int
) -> Samples:
    bodies = {"plain": BODY, "stream": STREAM_BODY}
    for target in targets.values():  # warm-up: connections, caches, first-call imports
        for kind in KINDS:
            stream = kind == "stream"
            await timed_calls(target, 4 * clients, bodies[kind], clients=clients, stream=stream, failures=[])
    samples = Samples(rounds)
    before = {side: tree_cpu_seconds(pids[side]) for side in SIDES}
    await asyncio.sleep(IDLE_SECONDS)  # both idle: what their background loops cost without calls
    samples.idle = {
        side: (tree_cpu_seconds(pids[side]) - before[side]) / IDLE_SECONDS * 1000 for side in SIDES
    }
    for round_ in range(rounds):
        order = ("bare", *(SIDES if round_ % 2 == 0 else SIDES[::-1]))
        for kind in KINDS:
            for name in order:
                before = tree_cpu_seconds(pids[name]) if name in pids else 0.0
                timed = await timed_calls(
                    targets[name],
                    n,
                    bodies[kind],
                    clients=clients,
                    stream=kind == "stream",
                    failures=samples.failures,
                )
                samples.seconds[name][kind][round_] = timed
                if name in pids:
                    await asyncio.sleep(SETTLE_SECONDS)
                    samples.cpu[name][kind][round_] = tree_cpu_seconds(pids[name]) - before
    return samples


def _commit() -> str:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.strip() or "unknown"


def main(n: int, rounds: int, clients: int, venv_option: str | None) -> dict[str, Any]:
    venv = venv_path(venv_option)
    proxy_executable(venv)  # before anything starts: a missing venv is said at once, with the fix
    load_before = os.getloadavg()
    began = time.monotonic()
    with _upstream() as upstream, tempfile.TemporaryDirectory(prefix="zw-peer-") as tmp:
        directory = Path(tmp)
        for side in SIDES:
            (directory / side).mkdir()
        # the tenants read only the emulator's URL; the emulator itself runs in its own process
        setup = prepare_unbound_gateway(directory / "gateway", SimpleNamespace(url=upstream))  # type: ignore[arg-type]
        with (
            served(setup.config, setup.home) as gateway,
            litellm_proxy(
                venv, upstream=upstream + "/v1", api_key=OPENAI_KEY, directory=directory / "litellm"
            ) as proxy,
        ):
            targets = {
                "bare": Target("bare", upstream, OPENAI_KEY, "gpt-4o-mini"),
                "gateway": Target("gateway", gateway.url, setup.token, str(BODY["model"])),
                "litellm": Target("litellm", proxy.url, proxy.key, proxy.model),
            }
            pids = {"gateway": gateway.pid, "litellm": proxy.pid}
            samples = asyncio.run(_measure(targets, pids, n, rounds, clients))
    overall = samples.figures()
    return {
        "benchmark": "gateway_overhead --peer litellm",
        "callsPerPhase": max(1, n // clients) * clients,
        "clients": clients,
        "rounds": rounds,
        **{name: overall[name] for name in ("bare", *SIDES)},
        "ratios": overall["ratios"],
        "idleCpuMsPerSecond": {side: _ms(samples.idle[side]) for side in SIDES},
        "failedCalls": {name: sum(f.startswith(name) for f in samples.failures) for name in ("bare", *SIDES)},
        "firstFailures": samples.failures[:5],
        "targets": TARGETS,
        "met": {name: r is not None and r <= TARGETS[name] for name, r in overall["ratios"].items()},
        "perRound": [samples.figures(r) for r in range(rounds)],
        "seconds": round(time.monotonic() - began, 1),
        "loadAverage": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in os.getloadavg()],
        },
        "zarniwoop": _commit(),
        "litellmVersion": litellm_version(venv),
        "python": sys.version.split()[0],
    }

"""Instructions `zarniwoop serve` executes per request, counted by valgrind's callgrind: the
performance gate of `.ci/run`.

    python bench/instructions.py                                        # every phase, JSON
    python bench/instructions.py --check bench/instructions-baseline.json   # the gate
    python bench/instructions.py --write-baseline bench/instructions-baseline.json
    python bench/instructions.py --only search --keep /tmp/cg           # one phase, dumps kept

Five phases, each counted per request (`PHASES` says how many requests; 4 clients at once):

- `healthz`: `GET /healthz`, the HTTP stack alone;
- `search`: `POST /v1/research/search` (encyclopedia, 5 hits) against the Wikipedia emulator of
  `bench/http_load.py`, the result cache off, so every search goes the whole way to the upstream;
- `chat`: `POST /v1/chat/completions` as `bench/gateway_overhead.py` sets it up (an account token,
  budgets at every level in SQLite, the emulated OpenAI upstream);
- `stream`: the same call with `"stream": true` (the upstream answers OpenAI's SSE, usage last);
- `investigate`: `POST /v1/research/investigate` with the built-in (heuristic) plan, evaluation and
  insights, over OpenAlex and Wikipedia on the emulator as `bench/investigate_overhead.py` sets
  them up, the cache off.

CPU time per request moves ±20 % with what else runs on a shared machine; an instruction count
hardly does: the same code, inputs, interpreter and libraries counted within 1.5 % of each other
(what moves is work driven by the clock — uvicorn's tick, background loops, the timers requests
leave cancelled in the event loop's heap popped as they come due — of which a phase takes in more
when a busy machine stretches it). The two gateway phases move more, ±4 %: a call's charge is
committed together with those of the calls finishing in the same turn of the event loop
(`ledger/charges.py`), so how the four clients interleave decides how many commits a phase makes —
ten runs of one tree counted chat 2.98–3.23 M and stream 4.71–4.99 M; their baselines are the top of
that range, not one lucky run. Each server runs under `valgrind --tool=callgrind
--instr-atstart=no` (start-up is not counted); after a warm-up, counting is switched on for each
phase with `callgrind_control`, and the phase's dump gives its total. Under valgrind the server is
~50× slower, so phases are counted in requests, not seconds. `--keep DIR` keeps the dumps (open
them with `callgrind_annotate`).

`--check FILE` compares each phase with the committed baseline (`bench/_baseline.py`): exit 1,
naming the phase, when one exceeds its baseline by more than 3 % — after counting such a phase a
second time and keeping the lower figure (load only ever adds to a count). Counts depend on the Python
interpreter and the library versions, so the baseline records them and the check says when they
differ. Lower a baseline, or raise one with a reason in the same commit, with `--write-baseline`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench import _baseline  # noqa: E402
from bench.gateway_overhead import BODY, STREAM_BODY, prepare_unbound_gateway  # noqa: E402
from bench.http_load import _run_emulator  # noqa: E402
from bench.investigate_overhead import QUESTION  # noqa: E402
from bench.investigate_overhead import _settings as investigate_settings  # noqa: E402
from tests.support.emulator import Emulator  # noqa: E402
from tests.support.gateway import openai_upstream, upstream_path  # noqa: E402
from tests.support.runtime import endpoint, only, write_config  # noqa: E402
from tests.support.served import Served, served  # noqa: E402
from zarniwoop.dispatch.flights import JOIN_GRACE_SECONDS  # noqa: E402

Send = Callable[[httpx.AsyncClient, int, int], Awaitable[bool]]
"""One request of a phase (client number, request number) → whether it answered as it should."""

SETTLE_SECONDS = 0.5
"""A phase's count runs on this long after its last answer, so that what its requests left to the
audit flusher (which writes 0.1 s after a record, in batches) is counted in it and not in the next."""


async def _healthz(http: httpx.AsyncClient, client: int, i: int) -> bool:
    return (await http.get("/healthz")).status_code == 200


async def _search(http: httpx.AsyncClient, client: int, i: int) -> bool:
    body = {"query": f"aurora {client} {i}", "modality": "encyclopedia", "maxResults": 5}
    response = await http.post("/v1/research/search", json=body)
    return response.status_code == 200 and len(response.json()["hits"]) == 5


async def _chat(http: httpx.AsyncClient, client: int, i: int) -> bool:
    response = await http.post("/v1/chat/completions", json=BODY)
    return response.status_code == 200 and response.json()["usage"]["total_tokens"] == 18


async def _stream(http: httpx.AsyncClient, client: int, i: int) -> bool:
    async with http.stream("POST", "/v1/chat/completions", json=STREAM_BODY) as response:
        body = await response.aread()
    return response.status_code == 200 and b'"total_tokens":' in body and body.endswith(b"[DONE]\n\n")


async def _investigate(http: httpx.AsyncClient, client: int, i: int) -> bool:
    response = await http.post("/v1/research/investigate", json={"question": QUESTION})
    if response.status_code != 200:
        return False
    answer = response.json()
    # heuristic steps only: a strategy naming an LLM would count a different pipeline
    return bool(answer["hits"]) and not any("llm" in s for s in answer["strategies"].values())


@dataclass(frozen=True)
class Phase:
    name: str
    requests: int
    warmup: int
    send: Send


# Request counts: the smallest whose figure repeats within ~1 % (two runs, same code); an
# investigation runs several searches, so it needs fewer requests.
PHASES = (
    Phase("healthz", 200, 60, _healthz),
    Phase("search", 200, 60, _search),
    Phase("chat", 200, 60, _chat),
    Phase("stream", 200, 60, _stream),
    Phase("investigate", 20, 5, _investigate),
)


async def _requests(url: str, token: str, clients: int, total: int, send: Send) -> int:
    """`total` requests over `clients` connections; returns how many failed."""
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    failed = 0
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=300) as http:

        async def client(number: int) -> None:
            nonlocal failed
            for i in range(number, total, clients):
                failed += not await send(http, number, i)

        await asyncio.gather(*(client(n) for n in range(clients)))
    return failed


def _control(pid: int, *flags: str) -> None:
    subprocess.run(["callgrind_control", *flags, str(pid)], check=True, capture_output=True)


def _total(dump: Path) -> int | None:
    """The dump's total, or None while callgrind is still writing it ("totals:" ends the file)."""
    try:
        lines = dump.read_text().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith("totals:"):
            return int(line.split()[1])
    return None


@dataclass
class Counter:
    """Counts phases of one server under callgrind."""

    server: Served
    out: Path
    token: str
    clients: int

    def warm(self, phase: Phase) -> int:
        return asyncio.run(_requests(self.server.url, self.token, self.clients, phase.warmup, phase.send))

    def count(self, phase: Phase, requests: int) -> tuple[int, int, float]:
        """(the phase's instructions, failed requests, seconds the phase took)."""
        (total, failed), seconds = self._counted(phase.name, lambda: self._run(phase, requests))
        return total, failed, seconds

    def _run(self, phase: Phase, requests: int) -> int:
        failed = asyncio.run(_requests(self.server.url, self.token, self.clients, requests, phase.send))
        time.sleep(SETTLE_SECONDS)
        return failed

    def _counted(self, name: str, run: Callable[[], int]) -> tuple[tuple[int, int], float]:
        """Zero, instrument on, run, instrument off, dump: ((instructions, failed), seconds)."""
        pid, before = self.server.pid, set(self.out.parent.glob(f"{self.out.name}*"))
        _control(pid, "--zero")
        _control(pid, "--instr=on")
        began = time.monotonic()
        failed = run()
        elapsed = time.monotonic() - began
        _control(pid, "--instr=off")
        _control(pid, f"--dump={name}")
        for _ in range(300):
            new = sorted(set(self.out.parent.glob(f"{self.out.name}*")) - before)
            if new and (total := _total(new[-1])) is not None:
                return (total, failed), elapsed
            time.sleep(0.1)
        raise SystemExit(f"callgrind wrote no dump for {name}")


def _callgrind(out: Path) -> tuple[str, ...]:
    """The server's wrapper: callgrind, counting only between the phases' switches."""
    return ("valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", "--quiet")


@contextmanager
def _search_server(directory: Path, out: Path, _: Emulator) -> Iterator[tuple[Served, str]]:
    """`bench/http_load.py`'s server: one Wikipedia endpoint on that bench's emulator (a process of
    its own, which honours `limit` as Wikipedia does), not the shared one."""
    parent, child = multiprocessing.Pipe()
    emulator = multiprocessing.Process(target=_run_emulator, args=(child,), daemon=True)
    emulator.start()
    try:
        settings = {
            **only(),
            **endpoint("wiki", "wikipedia", f"{parent.recv()}/w", **{"rateLimit.perSecond": 100_000}),
            "research.cache.ttlSeconds": 0,
            "research.cache.ttlSeconds.encyclopedia": 0,
        }
        config = write_config(directory, {"settings": settings})
        with served(config, directory / "home", wrapper=_callgrind(out), timeout=300) as server:
            assert server.token is not None
            yield server, server.token
    finally:
        parent.send("stop")
        emulator.join(timeout=10)


@contextmanager
def _gateway_server(directory: Path, out: Path, emulator: Emulator) -> Iterator[tuple[Served, str]]:
    """`bench/gateway_overhead.py`'s server and account token, quotas too large to bind."""
    emulator.add(upstream_path("openai"), openai_upstream)
    setup = prepare_unbound_gateway(directory, emulator)
    with served(setup.config, setup.home, wrapper=_callgrind(out), timeout=300) as server:
        yield server, setup.token


@contextmanager
def _investigate_server(directory: Path, out: Path, emulator: Emulator) -> Iterator[tuple[Served, str]]:
    """`bench/investigate_overhead.py`'s endpoints (answering at once, 10 hits), no LLM configured."""
    config = write_config(directory, {"settings": investigate_settings(emulator, 0.0, 10)})
    with served(config, directory / "home", wrapper=_callgrind(out), timeout=300) as server:
        assert server.token is not None
        yield server, server.token


SERVERS = (
    (_search_server, ("healthz", "search")),
    (_gateway_server, ("chat", "stream")),
    (_investigate_server, ("investigate",)),
)


def measure(names: set[str], requests: dict[str, int], clients: int, keep: Path | None) -> dict[str, Any]:
    """Instructions per request of each phase in `names`; failed requests counted beside."""
    phases = {p.name: p for p in PHASES}
    per_request: dict[str, int] = {}
    seconds: dict[str, float] = {}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="zw-instr-") as tmp, ExitStack() as stack:
        emulator = stack.enter_context(_emulator())
        for number, (start, served_phases) in enumerate(SERVERS):
            wanted = [phases[n] for n in served_phases if n in names]
            if not wanted:
                continue
            directory = Path(tmp) / str(number)
            dumps = (keep or Path(tmp) / "cg") / str(number)
            dumps.mkdir(parents=True, exist_ok=True)
            out = dumps / "callgrind.out"
            directory.mkdir()
            with start(directory, out, emulator) as (server, token):
                up = time.monotonic()  # the runtime joined the cache file before the banner
                counter = Counter(server, out, token, clients)
                failed += sum(counter.warm(phase) for phase in wanted)
                time.sleep(SETTLE_SECONDS)  # the warm-up's audit batch is written before counting
                # a process leases every search in its first JOIN_GRACE_SECONDS (dispatch/flights.py):
                # the figures are a lone server's steady state, past that
                time.sleep(max(0.0, JOIN_GRACE_SECONDS - (time.monotonic() - up)))
                for phase in wanted:
                    total, errors, seconds[phase.name] = counter.count(phase, requests[phase.name])
                    per_request[phase.name] = round(total / requests[phase.name])
                    failed += errors
    return {
        "instructionsPerRequest": per_request,
        "errors": failed,
        # how long each phase ran under valgrind: the busier the machine, the longer (read, never judged)
        "phaseSeconds": {name: round(s, 1) for name, s in seconds.items()},
    }


@contextmanager
def _emulator() -> Iterator[Emulator]:
    emulator = Emulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=[p.name for p in PHASES], help="count this phase")
    parser.add_argument("--requests", type=int, default=None, help="requests per phase (default: PHASES)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients (default 4)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the callgrind dumps in this folder")
    gate = parser.add_mutually_exclusive_group()
    gate.add_argument("--check", type=Path, metavar="BASELINE", help="exit 1 if a phase exceeds it by >3 %%")
    gate.add_argument("--write-baseline", type=Path, metavar="BASELINE", help="write the figures there")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("valgrind (with callgrind_control) is not installed")
    names = set(args.only or [p.name for p in PHASES])
    requests = {p.name: args.requests or p.requests for p in PHASES}
    baseline = _baseline.load(args.check) if args.check else None
    if baseline is not None:
        _baseline.same_workload(baseline, requests, args.clients)

    began = time.monotonic()
    report = {
        **measure(names, requests, args.clients, args.keep),
        "requestsPerPhase": {n: requests[n] for n in sorted(names)},
        "clients": args.clients,
        "environment": _baseline.environment(),
    }
    if baseline is not None and not report["errors"]:
        _recount(report, baseline, requests, args)
    report["seconds"] = round(time.monotonic() - began)  # how long the run took: reported, never judged
    print(json.dumps(report, indent=2))
    if report["errors"]:
        raise SystemExit(f"{report['errors']} requests did not answer as they should: the figures are void")
    if args.write_baseline:
        _baseline.write(args.write_baseline, report)
    if baseline is not None:
        sys.exit(_baseline.check(baseline, report))


def _recount(
    report: dict[str, Any], baseline: dict[str, Any], requests: dict[str, int], args: argparse.Namespace
) -> None:
    """Count the phases over the bound once more and keep the lower figure. A busy machine only ever
    adds to a count (clock-driven work a longer phase takes in: up to ~2 %), so the lower of two is
    the nearer to the code's own; a change in the code is in both."""
    over = _baseline.over(baseline, report["instructionsPerRequest"])
    if not over:
        return
    print(f"over the bound: {', '.join(over)}; counting again", file=sys.stderr)
    again = measure(set(over), requests, args.clients, args.keep and args.keep / "again")
    report["errors"] += again["errors"]
    figures = report["instructionsPerRequest"]
    report["firstCount"] = {name: figures[name] for name in over}
    for name in over:
        figures[name] = min(figures[name], again["instructionsPerRequest"][name])


if __name__ == "__main__":
    main()

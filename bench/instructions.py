"""Instructions `zarniwoop serve` executes per search and per `/healthz`, counted by valgrind's callgrind.

    python bench/instructions.py                   # 300 searches and 300 /healthz, 4 clients
    python bench/instructions.py --requests 500 --clients 8 --keep /tmp/cg
    python bench/instructions.py --gateway         # 300 gateway calls instead of searches

`--gateway` counts `POST /v1/chat/completions` instead of searches, with the setup of
`bench/gateway_overhead.py` (an account token, budgets at every level in SQLite, the emulated
OpenAI upstream): the figure behind that bench's `serverCpuMsPerCall` that a busy machine cannot
move.

CPU time per request (`bench/http_load.py`) moves ±20 % with what else runs on a shared machine;
an instruction count does not: the same code, inputs and environment give the same total within
a fraction of a percent, whatever the other cores do. The server runs under
`valgrind --tool=callgrind --instr-atstart=no` (start-up is not counted), the same emulator and
settings as `bench/http_load.py`; after a warm-up, counting is switched on for each phase with
`callgrind_control`, and the phase's dump gives its total. Under valgrind the server is ~50×
slower, so phases are counted in requests, not seconds. Prints one JSON object with instructions
per request of each phase and their ratio. `--keep DIR` keeps the dumps (open them with
`callgrind_annotate`).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.gateway_overhead import BODY  # noqa: E402
from bench.http_load import _run_emulator  # noqa: E402
from tests.support.emulator import Emulator  # noqa: E402
from tests.support.gateway import gateway_tenants, openai_completion, prepare_gateway, upstream_path  # noqa: E402
from tests.support.runtime import endpoint, only, write_config  # noqa: E402
from tests.support.served import served  # noqa: E402


async def _requests(
    url: str, token: str, clients: int, total: int, *, search: bool, gateway: bool = False
) -> int:
    """`total` requests over `clients` connections; returns how many failed."""
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    failed = 0
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=120) as http:

        async def client(number: int) -> None:
            nonlocal failed
            for i in range(number, total, clients):
                if gateway:
                    response = await http.post("/v1/chat/completions", json=BODY)
                    ok = response.status_code == 200 and response.json()["usage"]["total_tokens"] == 18
                elif search:
                    body = {"query": f"aurora {number} {i}", "modality": "encyclopedia", "maxResults": 5}
                    response = await http.post("/v1/research/search", json=body)
                    ok = response.status_code == 200 and len(response.json()["hits"]) == 5
                else:
                    response = await http.get("/healthz")
                    ok = response.status_code == 200
                failed += not ok

        await asyncio.gather(*(client(n) for n in range(clients)))
    return failed


def _control(pid: int, *flags: str) -> None:
    subprocess.run(["callgrind_control", *flags, str(pid)], check=True, capture_output=True)


def _total(dump: Path) -> int:
    for line in reversed(dump.read_text().splitlines()):  # "totals:" ends the file ("summary:" may be 0)
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise SystemExit(f"no totals in {dump}")


def _phase(pid: int, out: Path, name: str, run: object) -> tuple[int, int]:
    """Count one phase: zero, instrument on, run, instrument off, dump; (instructions, failures)."""
    before = set(out.parent.glob(f"{out.name}*"))
    _control(pid, "--zero")
    _control(pid, "--instr=on")
    assert callable(run)
    failed: int = run()
    _control(pid, "--instr=off")
    _control(pid, f"--dump={name}")
    for _ in range(100):
        new = sorted(set(out.parent.glob(f"{out.name}*")) - before)
        if new and _total_or_none(new[-1]) is not None:
            return _total(new[-1]), failed
        time.sleep(0.1)
    raise SystemExit(f"callgrind wrote no dump for {name}")


def _total_or_none(dump: Path) -> int | None:
    try:
        return _total(dump)
    except (SystemExit, OSError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="requests per phase (default 300)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients (default 4)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the callgrind dumps in this folder")
    parser.add_argument("--gateway", action="store_true", help="count gateway calls, not searches")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("valgrind (with callgrind_control) is not installed")
    if args.gateway:
        gateway_main(args)
        return

    parent, child = multiprocessing.Pipe()
    emulator = multiprocessing.Process(target=_run_emulator, args=(child,), daemon=True)
    emulator.start()
    emulator_url = parent.recv()
    try:
        with tempfile.TemporaryDirectory(prefix="zw-instr-") as tmp:
            directory = Path(tmp)
            dumps = args.keep or directory / "cg"
            dumps.mkdir(parents=True, exist_ok=True)
            out = dumps / "callgrind.out"
            settings = {
                **only(),
                **endpoint("wiki", "wikipedia", f"{emulator_url}/w", **{"rateLimit.perSecond": 100_000}),
                "research.cache.ttlSeconds": 0,
                "research.cache.ttlSeconds.encyclopedia": 0,
            }
            config = write_config(directory, {"settings": settings})
            wrapper = _callgrind(out)
            with served(config, directory / "home", wrapper=wrapper, timeout=300) as server:
                assert server.token is not None
                url, token, clients, n = server.url, server.token, args.clients, args.requests
                warm = asyncio.run(_requests(url, token, clients, 60, search=True))
                warm += asyncio.run(_requests(url, token, clients, 60, search=False))
                healthz = _phase(
                    server.pid,
                    out,
                    "healthz",
                    lambda: asyncio.run(_requests(url, token, clients, n, search=False)),
                )
                search = _phase(
                    server.pid,
                    out,
                    "search",
                    lambda: asyncio.run(_requests(url, token, clients, n, search=True)),
                )
    finally:
        parent.send("stop")
        emulator.join(timeout=10)

    _report(args, "Search", healthz, search, warm)


def _callgrind(out: Path) -> tuple[str, ...]:
    """The server's wrapper: callgrind, counting only between the phases' switches."""
    return ("valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", "--quiet")


def _report(
    args: argparse.Namespace, name: str, healthz: tuple[int, int], measured: tuple[int, int], warm: int
) -> None:
    """Print instructions per request of the measured phase and of `/healthz` beside it; exit 1 on errors."""
    per_healthz, per_request = healthz[0] / args.requests, measured[0] / args.requests
    lower = name[0].lower() + name[1:]
    report = {
        "requestsPerPhase": args.requests,
        "clients": args.clients,
        f"instructionsPer{name}": round(per_request),
        "instructionsPerHealthz": round(per_healthz),
        f"{lower}OverHealthz": round(per_request / per_healthz, 2),
        "errors": warm + healthz[1] + measured[1],
        "python": sys.version.split()[0],
    }
    print(json.dumps(report, indent=2))
    sys.exit(1 if report["errors"] else 0)


def gateway_main(args: argparse.Namespace) -> None:
    """Instructions per gateway call (and per `/healthz` beside it), as `bench/gateway_overhead.py`
    sets the call up."""
    emulator = Emulator().start()
    emulator.add(upstream_path("openai"), openai_completion("I'm fine, thanks.", 12, 6))
    try:
        with tempfile.TemporaryDirectory(prefix="zw-instr-gw-") as tmp:
            directory = Path(tmp)
            dumps = args.keep or directory / "cg"
            dumps.mkdir(parents=True, exist_ok=True)
            out = dumps / "callgrind.out"
            tenants = gateway_tenants(emulator)
            tenants["acme"]["accounts"]["mike"]["llm"]["quota"] = {
                "daily_tokens": 10**12,
                "monthly_tokens": 10**12,
            }
            setup = prepare_gateway(directory, emulator, tenants=tenants)
            wrapper = _callgrind(out)
            with served(setup.config, setup.home, wrapper=wrapper, timeout=300) as server:
                url, token, clients, n = server.url, setup.token, args.clients, args.requests
                warm = asyncio.run(_requests(url, token, clients, 60, search=False, gateway=True))
                warm += asyncio.run(_requests(url, token, clients, 60, search=False))
                healthz = _phase(
                    server.pid,
                    out,
                    "healthz",
                    lambda: asyncio.run(_requests(url, token, clients, n, search=False)),
                )
                calls = _phase(
                    server.pid,
                    out,
                    "gateway",
                    lambda: asyncio.run(_requests(url, token, clients, n, search=False, gateway=True)),
                )
    finally:
        emulator.stop()
    _report(args, "GatewayCall", healthz, calls, warm)


if __name__ == "__main__":
    main()

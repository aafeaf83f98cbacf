"""HTTP load: 64 concurrent clients against a real `zarniwoop serve` + the loopback emulator.

    python bench/http_load.py                 # 64 clients, 30 s of searches (+ a /healthz baseline)
    python bench/http_load.py --duration 10 --clients 32
    python bench/http_load.py --workers 2     # `zarniwoop serve --workers 2`

Three processes: the load generator (this one, httpx), `zarniwoop serve` (uvicorn), and the
provider emulator (its own process, so it does not share a GIL with either). Every search goes
the whole way: bearer-token check → FastAPI validation → dispatcher → HTTP to the emulator →
Wikipedia parser → JSON. The result cache is off so each request reaches the emulator.

Before the searches, the same clients hit `GET /healthz` for a baseline measured in the same run
(the HTTP stack alone), so the figures can be read as ratios. Prints one JSON object: throughput,
p50/p99 latency, errors (any non-200, or a search without hits), and the server's resident memory
(VmRSS from /proc/<pid>/status) before and after the load, and how many requests reached the
emulator during the searches: with the cache off that must equal the searches (`upstream.excessPercent`
0 — one attempt, one upstream request; exit 1 otherwise).

Server CPU is the whole server's: the `serve` process and, with `--workers N`, every worker
(their utime + stime from /proc/<pid>/stat, live children and reaped ones), so
`searchesPerServerCpuSecond` compares one process with N fairly; RSS is summed the same way.
On a shared machine CPU per request moves ±20 % from run to run: read
`ratios.serverCpuSearchOverHealthz`, and for a figure the machine cannot skew,
`bench/instructions.py` (instructions per search under callgrind). Where the time goes:
`bench/profile_serve.py` (docs/performance-cpu.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.support.bodies import wikipedia_pages  # noqa: E402
from tests.support.runtime import endpoint, only, write_config  # noqa: E402
from tests.support.served import child_pids, rss_kib, served, tree_cpu_seconds, wait_for_standby  # noqa: E402

WIKI = "/w/w/rest.php/v1/search/page"


def _run_emulator(conn: Connection) -> None:
    from tests.support.emulator import Emulator, RecordedRequest, Reply

    emulator = Emulator().start()
    titles = [f"Aurora {i}" for i in range(10)]
    # Wikipedia answers at most `limit` pages (the recorded `limit=5` body in
    # /work/shared/fixtures/wikipedia has 5), so the emulator does too: a search for 5 hits gets 5.
    replies = {n: Reply.json(wikipedia_pages(*titles[:n])) for n in range(1, len(titles) + 1)}

    def search(request: RecordedRequest) -> Reply:
        limit = request.param("limit")
        n = int(limit) if limit and limit.isdigit() else len(titles)
        return replies[max(1, min(n, len(titles)))]

    emulator.add(WIKI, search)
    conn.send(emulator.url)
    while conn.recv() == "count":  # how many search requests reached the "provider" so far
        conn.send(len(emulator.requests(WIKI)))
    emulator.stop()


@dataclass
class Phase:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    """CPU the server process used during the phase: per request, the figure a busy machine cannot skew."""

    def report(self) -> dict[str, float | int | str | None]:
        ordered = sorted(self.latencies)
        n = len(ordered)
        return {
            "requests": n,
            "errors": self.errors,
            "firstError": self.first_error,
            "seconds": round(self.seconds, 2),
            "throughputPerSecond": round(n / self.seconds, 1) if self.seconds else 0.0,
            "p50Ms": round(statistics.median(ordered) * 1000, 2) if n else None,
            "p99Ms": round(ordered[min(n - 1, int(n * 0.99))] * 1000, 2) if n else None,
            "maxMs": round(ordered[-1] * 1000, 2) if n else None,
            "serverCpuMsPerRequest": round(self.cpu_seconds / n * 1000, 3) if n else None,
            "requestsPerServerCpuSecond": round(n / self.cpu_seconds, 1) if self.cpu_seconds else None,
        }


async def _load(url: str, token: str, clients: int, seconds: float, *, search: bool) -> Phase:
    phase = Phase()
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=30) as http:
        stop_at = time.perf_counter() + seconds

        async def client(number: int) -> None:
            i = 0
            while time.perf_counter() < stop_at:
                i += 1
                begin = time.perf_counter()
                try:
                    if search:
                        body = {"query": f"aurora {number} {i}", "modality": "encyclopedia", "maxResults": 5}
                        response = await http.post("/v1/research/search", json=body)
                        ok = response.status_code == 200 and len(response.json()["hits"]) == 5
                    else:
                        response = await http.get("/healthz")
                        ok = response.status_code == 200
                    detail = f"HTTP {response.status_code}: {response.text[:200]}"
                except httpx.HTTPError as exc:
                    ok, detail = False, f"{type(exc).__name__}: {exc}"
                phase.latencies.append(time.perf_counter() - begin)
                if not ok:
                    phase.errors += 1
                    phase.first_error = phase.first_error or detail

        begin = time.perf_counter()
        await asyncio.gather(*(client(n) for n in range(clients)))
        phase.seconds = time.perf_counter() - begin
    return phase


def _tree_rss(pid: int) -> int:
    """Resident memory of the server and its workers (KiB)."""
    return rss_kib(pid) + sum(rss_kib(child) for child in child_pids(pid))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of searches (default 30)")
    parser.add_argument(
        "--baseline", type=float, default=None, help="seconds of /healthz (default duration/3)"
    )
    parser.add_argument("--clients", type=int, default=64, help="concurrent clients (default 64)")
    parser.add_argument("--workers", type=int, default=1, help="`serve --workers N` (default 1)")
    parser.add_argument(
        "--rate",
        type=float,
        default=100_000,
        help="the endpoint's rateLimit.perSecond (default 100000: paced, never waiting; 0 = no pacing)",
    )
    args = parser.parse_args()
    baseline_seconds = args.baseline if args.baseline is not None else max(2.0, args.duration / 3)

    parent, child = multiprocessing.Pipe()
    emulator = multiprocessing.Process(target=_run_emulator, args=(child,), daemon=True)
    emulator.start()
    emulator_url = parent.recv()
    try:
        with tempfile.TemporaryDirectory(prefix="zw-bench-") as tmp:
            directory = Path(tmp)
            settings = {
                **only(),
                **endpoint("wiki", "wikipedia", f"{emulator_url}/w", **{"rateLimit.perSecond": args.rate}),
                "research.cache.ttlSeconds": 0,
                "research.cache.ttlSeconds.encyclopedia": 0,
            }
            config = write_config(directory, {"settings": settings})
            workers = ("--workers", str(args.workers)) if args.workers > 1 else ()
            with served(config, directory / "home", *workers) as server:
                assert server.token is not None
                asyncio.run(_load(server.url, server.token, 8, 1.0, search=True))  # warm-up
                if args.workers > 1:  # the standby's imports are start-up cost, not per search
                    wait_for_standby(server.pid)
                rss_before = _tree_rss(server.pid)
                parent.send("count")
                upstream_before = parent.recv()
                cpu_0 = tree_cpu_seconds(server.pid)
                baseline = asyncio.run(
                    _load(server.url, server.token, args.clients, baseline_seconds, search=False)
                )
                cpu_1 = tree_cpu_seconds(server.pid)
                searches = asyncio.run(
                    _load(server.url, server.token, args.clients, args.duration, search=True)
                )
                cpu_2 = tree_cpu_seconds(server.pid)
                parent.send("count")
                upstream = parent.recv() - upstream_before
                rss_after = _tree_rss(server.pid)
                baseline.cpu_seconds, searches.cpu_seconds = cpu_1 - cpu_0, cpu_2 - cpu_1
    finally:
        parent.send("stop")
        emulator.join(timeout=10)

    s, b = searches.report(), baseline.report()
    out = {
        "clients": args.clients,
        "workers": args.workers,
        "ratePerSecond": args.rate,
        "durationSeconds": args.duration,
        "search": s,
        "healthzBaseline": b,
        "ratios": {
            "p50SearchOverHealthz": round(s["p50Ms"] / b["p50Ms"], 2) if s["p50Ms"] and b["p50Ms"] else None,
            "throughputSearchOverHealthz": round(s["throughputPerSecond"] / b["throughputPerSecond"], 3)
            if b["throughputPerSecond"]
            else None,
            "serverCpuSearchOverHealthz": round(s["serverCpuMsPerRequest"] / b["serverCpuMsPerRequest"], 2)
            if s["serverCpuMsPerRequest"] and b["serverCpuMsPerRequest"]
            else None,
        },
        "errors": searches.errors + baseline.errors,
        "upstream": {
            # every search reaches the emulator exactly once (the cache is off): more is a resend
            "searches": s["requests"],
            "requests": upstream,
            "excessPercent": round((upstream - s["requests"]) / s["requests"] * 100, 3)
            if s["requests"]
            else None,
        },
        "serverRssKiB": {"before": rss_before, "after": rss_after, "growth": rss_after - rss_before},
        "python": sys.version.split()[0],
        "cpus": multiprocessing.cpu_count(),
    }
    print(json.dumps(out, indent=2))
    sys.exit(1 if out["errors"] or upstream != s["requests"] else 0)


if __name__ == "__main__":
    main()

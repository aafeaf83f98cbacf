"""What the dispatcher adds to one search: median and p99 vs a direct call, in one run.

All sides hit the same loopback emulator endpoint (an OpenAlex-shaped body of 5 works). Two direct
sides: httpx's `client.get(url)` + `json.loads`, and the runtime's own transport
(`HttpTransport.send`, aiohttp underneath, what the dispatcher sends over) +
`json.loads`; the dispatcher side is a full `Dispatcher.search()` (candidate ordering, gate,
cooldown lookup in SQLite, pacing, timeout, protocol build + parse, attempt bookkeeping) with the
result cache off. Calls alternate between the sides so machine noise hits them alike. What the
dispatcher itself adds is `added_over_transport`; `ratio_median` compares the dispatcher's whole
search with httpx's bare GET.

    python bench/dispatch_overhead.py [--n 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.support.bodies import openalex_works  # noqa: E402
from tests.support.emulator import Emulator, Reply  # noqa: E402
from tests.support.runtime import endpoint, only, open_runtime  # noqa: E402
from zarniwoop.contract import RequestSpec, SearchRequest, SearchScope  # noqa: E402


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 3),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 3),
    }


async def main(n: int) -> dict[str, object]:
    emu = Emulator().start()
    emu.add("/a/works", Reply.json(openalex_works(5)))
    settings = {
        **only(),
        **endpoint("oa", "openalex", f"{emu.url}/a", rateLimit__perSecond=0),
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.academic": 0,
    }
    with tempfile.TemporaryDirectory() as tmp:
        runtime = await open_runtime(Path(tmp), settings)
        client = httpx.AsyncClient()
        url = f"{emu.url}/a/works?search=q&per-page=10"
        spec = RequestSpec("GET", f"{emu.url}/a/works", params=(("search", "q"), ("per-page", "10")))
        request = SearchRequest.create("q", "academic")
        scope = SearchScope()
        direct: list[float] = []
        transported: list[float] = []
        dispatched: list[float] = []
        for i in range(n + 200):
            t0 = time.perf_counter()
            json.loads((await client.get(url)).content)
            t1 = time.perf_counter()
            json.loads((await runtime.transport.send(spec, timeout=8.0)).body)
            t2 = time.perf_counter()
            result = await runtime.dispatcher.search(request, scope)
            t3 = time.perf_counter()
            assert len(result.hits) == 5, result.error_message
            if i >= 200:  # warm-up: pools, caches, JIT-less but allocator-warm
                direct.append(t1 - t0)
                transported.append(t2 - t1)
                dispatched.append(t3 - t2)
        await client.aclose()
        await runtime.aclose()
    emu.stop()
    d, t, s = summary(direct), summary(transported), summary(dispatched)
    return {
        "benchmark": "dispatch_overhead",
        "n": n,
        "direct_httpx": d,
        "direct_transport": t,
        "dispatcher": s,
        "added_over_transport_median_ms": round(s["median_ms"] - t["median_ms"], 3),
        "ratio_over_transport_median": round(s["median_ms"] / t["median_ms"], 3),
        "added_median_ms": round(s["median_ms"] - d["median_ms"], 3),
        "added_p99_ms": round(s["p99_ms"] - d["p99_ms"], 3),
        "ratio_median": round(s["median_ms"] / d["median_ms"], 3),
        "ratio_p99": round(s["p99_ms"] / d["p99_ms"], 3),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    print(json.dumps(asyncio.run(main(parser.parse_args().n)), indent=2))

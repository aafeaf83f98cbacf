"""What a hanging default costs while hedging is at its default: searches paying more than 2× the
healthy p99, of N searches started at a steady rate (wall clock, in one run).

Two sides against the loopback emulator: *healthy* (the fallback alone, its latency is the p99
the other side is judged by) and *hanging* (a default that never answers, `timeoutMs` 8000 as
shipped, with the healthy fallback behind it). No `research.hedge.afterMs`: before the default has
a p95, a call outstanding past `hedging.COLD_SUSPECT_AFTER` makes it suspect, new searches race
it at once, and the hedges it loses bench it (docs/robustness.md). Before issue 27 every search
started before the first timeout (8 s × the rate) paid the whole timeout: 40 of 200 at 5/s.

    python bench/hanging_default.py [--n 200] [--rate 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.bodies import openalex_works  # noqa: E402
from tests.support.emulator import Emulator, Reply  # noqa: E402
from tests.support.runtime import endpoint, only, open_runtime  # noqa: E402
from zarniwoop.contract import SearchRequest, SearchScope  # noqa: E402


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


async def timed_searches(home: Path, settings: dict[str, object], n: int, rate: float) -> list[float]:
    """`n` searches started every 1/rate s (concurrently, as callers would), each one's latency."""
    home.mkdir()
    async with await open_runtime(home, settings) as rt:

        async def one(i: int) -> float:
            begin = time.perf_counter()
            result = await rt.dispatcher.search(SearchRequest.create(f"q{i}", "academic"), SearchScope())
            assert result.provider_instance_id == "oa-ok", result.error_message
            return time.perf_counter() - begin

        tasks = []
        start = time.perf_counter()
        for i in range(n):
            await asyncio.sleep(max(0.0, start + i / rate - time.perf_counter()))
            tasks.append(asyncio.create_task(one(i)))
        return list(await asyncio.gather(*tasks))


async def main(n: int, rate: float) -> dict[str, object]:
    emu = Emulator().start()
    emu.add("/hang/works", Reply(hang=True))
    emu.add("/ok/works", Reply.json(openalex_works(3)))
    fast = {"rateLimit__perSecond": 1000}
    healthy = {
        **only(),
        **endpoint("oa-ok", "openalex", f"{emu.url}/ok", **fast),
        "research.default.academic": "oa-ok",
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.academic": 0,
    }
    hanging = {
        **healthy,
        **endpoint("oa-hang", "openalex", f"{emu.url}/hang", **fast),
        "research.default.academic": "oa-hang",
        "research.fallback.academic": "oa-ok",
    }
    try:
        with tempfile.TemporaryDirectory() as tmp:
            baseline = await timed_searches(Path(tmp) / "healthy", healthy, n, rate)
            hung = await timed_searches(Path(tmp) / "hanging", hanging, n, rate)
    finally:
        emu.stop()
    limit = 2 * p99(baseline)
    slow = [i for i, seconds in enumerate(hung) if seconds > limit]
    return {
        "searches": n,
        "rate_per_s": rate,
        "healthy_p99_ms": round(p99(baseline) * 1000, 2),
        "hanging_p99_ms": round(p99(hung) * 1000, 2),
        "over_2x_healthy_p99": len(slow),
        "which": slow,
        "their_ms": [round(hung[i] * 1000) for i in slow],
        "waited_for_the_hang": [i for i, seconds in enumerate(hung) if seconds > 1.0],
        "calls_to_the_hanging_default": len(emu.requests("/hang/works")),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--rate", type=float, default=5.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.n, args.rate)), indent=2))

"""What auditing costs a search: per-search time with the usage counter on, as a ratio to off.

    python bench/audit_overhead.py [--searches 100] [--rounds 15] [--postgres-url postgresql://…]

One runtime per database backend (SQLite; PostgreSQL when a URL is given or
ZARNIWOOP_TEST_POSTGRES_URL is set — a scratch schema, dropped afterwards), searching the loopback
emulator with the cache off. Each round runs the same searches three ways, interleaved so drift
hits all alike: audit off (the usage counter detached), on (spooled, batched), and on with an
fsync per record. Sequential searches alternate the three modes search by search and give the
per-search latency (median, p99); bursts of concurrent searches, one per mode per round, give
the throughput (median over rounds). Ratios are against "off" measured in the same run.
After each audited phase the bench checks that every call reached the table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support (the emulator)

from tests.support.bodies import openalex_works
from tests.support.emulator import Emulator, Reply
from tests.support.runtime import endpoint, only, open_runtime
from zarniwoop.contract import Outcome, SearchRequest, SearchScope
from zarniwoop.contract.results import Attempt
from zarniwoop.runtime import Runtime

MODES = ("off", "on", "on_fsync")


def _set_mode(rt: Runtime, mode: str) -> None:
    """off: the usage counter detached from the dispatcher; on: attached; on_fsync: attached + fsync."""
    assert rt.usage is not None
    attached = rt.usage in rt.dispatcher.observers
    if mode == "off" and attached:
        rt.dispatcher.observers.remove(rt.usage)
    if mode != "off" and not attached:
        rt.dispatcher.observers.insert(0, rt.usage)
    rt.usage.spool.fsync = mode == "on_fsync"


async def _sequential(rt: Runtime, searches: int) -> dict[str, list[float]]:
    """Per-search seconds in each mode, the modes alternating search by search."""
    scope = SearchScope()
    tag = uuid.uuid4().hex[:6]
    times: dict[str, list[float]] = {m: [] for m in MODES}
    for i in range(searches * len(MODES)):
        mode = MODES[i % len(MODES)]
        _set_mode(rt, mode)
        begin = time.perf_counter()
        await rt.dispatcher.search(SearchRequest.create(f"seq {tag} {i}", "academic"), scope)
        times[mode].append(time.perf_counter() - begin)
    return times


async def _burst(rt: Runtime, mode: str, searches: int, concurrency: int) -> float:
    """Searches per second with `concurrency` searches in flight, in one mode."""
    _set_mode(rt, mode)
    scope = SearchScope()
    tag = uuid.uuid4().hex[:6]
    queue = list(range(searches))

    async def worker() -> None:
        while queue:
            i = queue.pop()
            await rt.dispatcher.search(SearchRequest.create(f"burst {tag} {i}", "academic"), scope)

    begin = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return searches / (time.perf_counter() - begin)


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * q) - 1)]


async def bench_backend(
    name: str, database_url: str | None, emulator: Emulator, searches: int, rounds: int, concurrency: int
) -> dict[str, Any]:
    settings = {
        **only(),
        **endpoint("bench-empty", "openalex", f"{emulator.url}/empty", rateLimit__perSecond=100_000),
        **endpoint("bench", "openalex", f"{emulator.url}/bench", rateLimit__perSecond=100_000),
        "research.default.academic": "bench-empty",
        "research.fallback.academic": "bench",
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.academic": 0,
    }
    extra = {"database_url": database_url} if database_url else {}
    with tempfile.TemporaryDirectory() as folder:
        async with await open_runtime(Path(folder), settings, **extra) as rt:
            assert rt.usage is not None
            await _sequential(rt, 10)  # warm-up: connections, pools, code paths
            await rt.usage.flush()
            sequential: dict[str, list[float]] = {m: [] for m in MODES}
            burst: dict[str, list[float]] = {m: [] for m in MODES}
            appended = rt.usage.spool.appended
            for _ in range(rounds):
                for mode, samples in (await _sequential(rt, searches)).items():
                    sequential[mode] += samples
                for mode in MODES:
                    burst[mode].append(await _burst(rt, mode, searches, concurrency))
            # two calls per audited search (the empty default, then the fallback), each a "started"
            # and a completed line; sequential + burst, in two of the three modes (a periodic flush
            # during a burst carries a call still in flight forward: its "started" line once more)
            assert rt.usage.spool.appended - appended >= rounds * 2 * 2 * 2 * 2 * searches
            flush_begin = time.perf_counter()
            await rt.usage.flush()
            flush_ms = (time.perf_counter() - flush_begin) * 1000
            parts = await _component_costs(rt)
            rows = (await rt.db.fetchone("SELECT COUNT(*) FROM research_call_records"))[0]
            expected = (
                2 * 2 * 10 + rounds * 2 * 2 * 2 * searches + parts.pop("rows")
            )  # warm-up + rounds + parts
            assert rows == expected, f"{name}: {rows} audit rows, expected {expected}"
    med = {m: statistics.median(sequential[m]) * 1000 for m in MODES}
    p99 = {m: _p(sequential[m], 0.99) * 1000 for m in MODES}
    thr = {m: statistics.median(burst[m]) for m in MODES}
    return {
        "sequential_median_ms": {m: round(med[m], 4) for m in MODES},
        "sequential_p99_ms": {m: round(p99[m], 4) for m in MODES},
        "sequential_median_ratio_to_off": {m: round(med[m] / med["off"], 4) for m in MODES},
        "sequential_median_added_us": {m: round((med[m] - med["off"]) * 1000, 1) for m in MODES},
        "burst_searches_per_second": {m: round(thr[m], 1) for m in MODES},
        "burst_time_ratio_to_off": {m: round(thr["off"] / thr[m], 4) for m in MODES},
        "final_flush_ms": round(flush_ms, 2),
        **parts,
        "audit_rows_checked": rows,
    }


async def _component_costs(rt: Runtime, records: int = 5000) -> dict[str, Any]:
    """The two halves of auditing, timed alone: what a search pays inline (one spooled record), and
    what the background flusher pays per record to batch it into the database."""
    assert rt.usage is not None
    instance = (await rt.factory.providers(SearchScope())).instances["bench"]
    request = SearchRequest.create("component cost", "academic")
    attempt = Attempt("bench", Outcome.SUCCESS, None, 3)
    costs: dict[str, Any] = {"rows": 0}
    for fsync in (False, True):
        rt.usage.spool.fsync = fsync
        n = records if not fsync else records // 10
        begin = time.perf_counter()
        for _ in range(n):
            rt.usage.on_attempt(SearchScope(), instance, request, attempt, 1)
        inline = (time.perf_counter() - begin) * 1e6 / n
        costs["inline_us_per_call_fsync" if fsync else "inline_us_per_call"] = round(inline, 2)
        begin = time.perf_counter()
        written = await rt.usage.flush(orphans=False)
        if not fsync:
            costs["flush_us_per_record"] = round((time.perf_counter() - begin) * 1e6 / max(1, written), 2)
        costs["rows"] += n
    rt.usage.spool.fsync = False
    return costs


async def _pg_schema(url: str, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=100, help="searches per phase")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--postgres-url", default=os.environ.get("ZARNIWOOP_TEST_POSTGRES_URL"))
    args = parser.parse_args()

    emulator = Emulator().start()
    emulator.add("/bench/works", Reply.json(openalex_works(1)))
    # Each search makes two calls (an empty answer, then one with a hit), so a search writes two rows.
    emulator.add("/empty/works", Reply.json(openalex_works(0)))
    report: dict[str, Any] = {
        "searches_per_phase": args.searches,
        "rounds": args.rounds,
        "concurrency": args.concurrency,
        "calls_per_search": 2,
        "backends": {},
    }
    try:
        report["backends"]["sqlite"] = await bench_backend(
            "sqlite", None, emulator, args.searches, args.rounds, args.concurrency
        )
        if args.postgres_url:
            schema = f"zw_bench_{uuid.uuid4().hex[:8]}"
            await _pg_schema(args.postgres_url, f'CREATE SCHEMA "{schema}"')
            sep = "&" if "?" in args.postgres_url else "?"
            try:
                report["backends"]["postgres"] = await bench_backend(
                    "postgres",
                    f"{args.postgres_url}{sep}schema={schema}",
                    emulator,
                    args.searches,
                    args.rounds,
                    args.concurrency,
                )
            finally:
                await _pg_schema(args.postgres_url, f'DROP SCHEMA "{schema}" CASCADE')
        else:
            report["backends"]["postgres"] = "skipped: no --postgres-url / ZARNIWOOP_TEST_POSTGRES_URL"
    finally:
        emulator.stop()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())

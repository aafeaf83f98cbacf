"""Memory of `zarniwoop serve` under distinct searches with the result cache on (issue 18).

    python bench/memory.py                  # 10,000 distinct WEB searches, Tavily-shaped bodies
    python bench/memory.py --searches 2000 --clients 16
    python bench/memory.py --workers 2      # RSS summed over the parent, the workers and the standby

Two servers in the same run against one loopback emulator (its own process): one with the default
cache (`research.cache.maxBytes` 64 MiB), one with the cache off — the baseline. Every answer
carries ten results with ~13 KB of page text each (`raw_content`, kept inline), like the Tavily
bodies that grew RSS by 586 MiB before the cache was bounded by bytes. Prints one JSON object:
RSS (VmRSS) idle after a warm-up and after the searches, for both servers, and the growth ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.support.runtime import endpoint, only, write_config  # noqa: E402
from tests.support.served import child_pids, rss_kib, served, wait_for_standby  # noqa: E402

PAGE_CHARS = 13_000


def _tavily_body() -> bytes:
    words = ("aurora borealis solar wind magnetosphere oxygen nitrogen emission " * 300)[:PAGE_CHARS]
    results = [
        {
            "title": f"Result {i}",
            "url": f"https://example.org/page/{i}",
            "content": words[:300],
            "raw_content": words,
            "score": 0.9 - i / 100,
        }
        for i in range(10)
    ]
    return json.dumps({"query": "q", "results": results, "response_time": 0.5}).encode()


def _run_emulator(conn: Connection) -> None:
    from tests.support.emulator import Emulator, Reply

    emulator = Emulator().start()
    emulator.add("/tavily/search", Reply.json(_tavily_body()))
    conn.send(emulator.url)
    conn.recv()
    emulator.stop()


async def _searches(url: str, token: str, count: int, clients: int, tag: str) -> int:
    failures = 0
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(count):
        queue.put_nowait(i)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, limits=limits, timeout=30
    ) as http:

        async def worker() -> None:
            nonlocal failures
            while not queue.empty():
                i = queue.get_nowait()
                body = {"query": f"{tag} distinct query {i}", "modality": "web", "maxResults": 10}
                response = await http.post("/v1/research/search", json=body)
                if response.status_code != 200 or not response.json()["hits"]:
                    failures += 1

        await asyncio.gather(*(worker() for _ in range(clients)))
    return failures


def _tree_rss_kib(pid: int) -> int:
    """VmRSS of the server and its children (`--workers N`: the parent, each worker, the standby)."""
    return rss_kib(pid) + sum(rss_kib(child) for child in child_pids(pid))


def _measure(
    emulator_url: str, cache_seconds: int, searches: int, clients: int, workers: int = 1
) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="zw-mem-") as tmp:
        directory = Path(tmp)
        settings = {
            **only("tavily"),
            **endpoint(
                "tavily",
                "tavily",
                f"{emulator_url}/tavily",
                apiKey="tvly-bench",
                **{"rateLimit.perSecond": 100_000},
            ),
            "research.cache.ttlSeconds": cache_seconds,
        }
        config = write_config(directory, {"settings": settings})
        extra = ("--workers", str(workers)) if workers > 1 else ()
        with served(config, directory / "home", *extra) as server:
            assert server.token is not None
            asyncio.run(_searches(server.url, server.token, 200, clients, "warm-up"))
            if workers > 1:
                wait_for_standby(server.pid)  # its imports done: idle includes the standby
            idle = _tree_rss_kib(server.pid)
            began = time.perf_counter()
            failures = asyncio.run(_searches(server.url, server.token, searches, clients, "bench"))
            seconds = time.perf_counter() - began
            after = _tree_rss_kib(server.pid)
        cache_file = sum(p.stat().st_size for p in (directory / "home").glob("cache.db*"))
    return {
        "cacheTtlSeconds": cache_seconds,
        "workers": workers,
        "searches": searches,
        "failures": failures,
        "seconds": round(seconds, 1),
        "rssIdleMiB": round(idle / 1024, 1),
        "rssAfterMiB": round(after / 1024, 1),
        "growthMiB": round((after - idle) / 1024, 1),
        "cacheFileMiB": round(cache_file / 2**20, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searches", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument(
        "--workers", type=int, default=1, help="serve --workers N (RSS summed over the processes)"
    )
    args = parser.parse_args()
    parent, child = multiprocessing.Pipe()
    emulator = multiprocessing.Process(target=_run_emulator, args=(child,), daemon=True)
    emulator.start()
    url = parent.recv()
    try:
        cached = _measure(url, 600, args.searches, args.clients, args.workers)
        uncached = _measure(url, 0, args.searches, args.clients, args.workers)
    finally:
        parent.send("stop")
        emulator.join(timeout=10)
    out = {
        "cacheOn": cached,
        "cacheOff": uncached,
        "growthOverCacheOffMiB": round(float(cached["growthMiB"]) - float(uncached["growthMiB"]), 1),  # type: ignore[arg-type]
        "withinIdlePlus100MiB": float(cached["growthMiB"]) <= 100,  # type: ignore[arg-type]
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

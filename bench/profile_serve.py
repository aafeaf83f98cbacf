"""Where `zarniwoop serve` spends its CPU under `bench/http_load.py`'s search load (cProfile).

    python bench/profile_serve.py                      # 10 s of searches, 16 clients, top 25 by own time
    python bench/profile_serve.py --duration 20 --top 40 --out serve.prof

The server runs under cProfile (py-spy needs ptrace, which containers often refuse) through
`bench/_profiled.py`, which switches the profiler on after start-up and a warm-up (SIGUSR1) and off
at the end of the load (SIGUSR2): the profile holds the searches only. The same emulator and
settings as `bench/http_load.py`. cProfile slows Python code about ×2, so read the shares, not the
absolute times. Prints the top entries by own time, then by cumulative time (`--sort` to pick
one). The `.prof` file opens in `pstats`. Note that cProfile counts each resumption of a coroutine
as a call: `ncalls` of an `async def` is not the number of requests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.http_load import _load, _run_emulator  # noqa: E402
from tests.support.runtime import endpoint, only, write_config  # noqa: E402
from tests.support.served import served  # noqa: E402

GROUPS = (
    ("zarniwoop", ("/zarniwoop/",)),
    ("httpx, httpcore2, h11, anyio", ("/httpx/", "/httpcore2/", "/h11/", "/anyio/")),
    ("FastAPI, Starlette", ("/fastapi/", "/starlette/")),
    ("uvicorn", ("/uvicorn/",)),
    ("asyncio", ("/asyncio/",)),
    ("pydantic", ("/pydantic/", "/pydantic_core/")),
)


def by_package(stats: pstats.Stats) -> dict[str, float]:
    """Shares of own time (%) by package; the rest (builtins, C methods, other stdlib) as "other"."""
    own: dict[str, float] = dict.fromkeys([name for name, _ in GROUPS] + ["other"], 0.0)
    table: dict[tuple[str, int, str], tuple[int, int, float, float, object]] = stats.stats  # type: ignore[attr-defined]
    for (filename, _line, _name), (_cc, _nc, tottime, _ct, _callers) in table.items():
        group = next((name for name, marks in GROUPS if any(m in filename for m in marks)), "other")
        own[group] += tottime
    total = sum(own.values()) or 1.0
    return {name: round(100 * seconds / total, 1) for name, seconds in own.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", type=Path, default=None, help="keep the .prof file here")
    parser.add_argument("--sort", choices=("both", "tottime", "cumulative"), default="both")
    args = parser.parse_args()
    parent, child = multiprocessing.Pipe()
    emulator = multiprocessing.Process(target=_run_emulator, args=(child,), daemon=True)
    emulator.start()
    emulator_url = parent.recv()
    try:
        with tempfile.TemporaryDirectory(prefix="zw-profile-") as tmp:
            directory = Path(tmp)
            out = args.out or directory / "serve.prof"
            settings = {
                **only(),
                **endpoint("wiki", "wikipedia", f"{emulator_url}/w", **{"rateLimit.perSecond": 100_000}),
                "research.cache.ttlSeconds": 0,
                "research.cache.ttlSeconds.encyclopedia": 0,
            }
            config = write_config(directory, {"settings": settings})
            profiler = (str(ROOT / "bench" / "_profiled.py"), str(out.resolve()))
            with served(config, directory / "home", python_args=profiler) as server:
                assert server.token is not None
                asyncio.run(_load(server.url, server.token, 8, 1.0, search=True))  # warm-up
                os.kill(server.pid, signal.SIGUSR1)
                phase = asyncio.run(_load(server.url, server.token, args.clients, args.duration, search=True))
                os.kill(server.pid, signal.SIGUSR2)
                for _ in range(100):  # the server writes the file between two requests
                    if out.exists():
                        break
                    time.sleep(0.1)
                time.sleep(0.5)
            n = len(phase.latencies)
            print(f"{n} searches, {phase.errors} errors\n")
            stats = pstats.Stats(str(out))
            print(f"profiled CPU per search: {stats.total_tt / n * 1000:.2f} ms (cProfile-inflated)\n")
            print("own time by package (%):", json.dumps(by_package(stats)), "\n")
            for key in ("tottime", "cumulative"):
                if args.sort in (key, "both"):
                    stats.sort_stats(key).print_stats(args.top)
    finally:
        parent.send("stop")
        emulator.join(timeout=10)


if __name__ == "__main__":
    main()

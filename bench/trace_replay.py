"""The replayed agent trace (issue 27): upstream calls of the same 300 searches — 30 % repeats,
20 % identical concurrent bursts — sent to one `serve` process, through `serve --workers 2` on
fresh connections, and as one `zarniwoop search` CLI process per search on one ZARNIWOOP_HOME.

    python bench/trace_replay.py                       # 300 searches, all three modes
    python bench/trace_replay.py --searches 60 --modes serve,cli --cli-parallel 4

The trace is `tests/support/trace.py`'s seeded generator; its floor F is the number of distinct
searches (every other one can be a cache hit or follow an identical flight). Prints one JSON object:
searches, F, naive (= searches, no cache and no coalescing), the upstream calls and seconds of each
mode, and the saving against naive. Exits 1 if any mode's upstream calls differ from F.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.emulator import Emulator  # noqa: E402
from tests.support.trace import MODES, add_routes, agent_trace, floor, replay, searches_in  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument(
        "--cli-parallel", type=int, default=1, help="CLI steps run at a time (default 1: in order)"
    )
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"--modes: expected some of {', '.join(MODES)}, got {', '.join(unknown)}")
    trace = agent_trace(args.searches, seed=args.seed)
    f = floor(trace)
    emulator = Emulator().start()
    add_routes(emulator)
    results: dict[str, dict[str, float]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="zw-trace-") as tmp:
            for mode in modes:
                began = time.perf_counter()
                calls = replay(emulator, Path(tmp), trace, mode, cli_parallel=args.cli_parallel)
                results[mode] = {"upstreamCalls": calls, "seconds": round(time.perf_counter() - began, 1)}
    finally:
        emulator.stop()
    searches = searches_in(trace)
    out = {
        "searches": searches,
        "steps": len(trace),
        "bursts": sum(1 for s in trace if s.copies > 1),
        "floor": f,
        "naive": searches,
        "savingPercent": round(100 * (searches - f) / searches, 1),
        "modes": results,
        "allAtFloor": all(r["upstreamCalls"] == f for r in results.values()),
    }
    print(json.dumps(out, indent=2))
    return 0 if out["allAtFloor"] else 1


if __name__ == "__main__":
    sys.exit(main())

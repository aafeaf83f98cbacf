"""Where `zarniwoop serve` spends its CPU on OpenAI-compatible gateway calls (cProfile).

    python bench/profile_gateway.py                    # 2,000 calls, 16 clients, top 25 by own time
    python bench/profile_gateway.py --n 4000 --top 40 --out gateway.prof

The same setup as `bench/gateway_overhead.py` (emulated OpenAI upstream, an account token with
token budgets at every level) and the same switch as `bench/profile_serve.py`: `bench/_profiled.py`
turns cProfile on after a warm-up (SIGUSR1) and off after the calls (SIGUSR2), so the profile holds
the gateway calls only. cProfile slows Python code about ×2: read the shares, not the times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from bench.gateway_overhead import gateway_calls, prepare_unbound_gateway  # noqa: E402
from bench.profile_serve import by_package  # noqa: E402
from tests.support.emulator import Emulator  # noqa: E402
from tests.support.gateway import openai_completion, upstream_path  # noqa: E402
from tests.support.served import served  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", type=Path, default=None, help="keep the .prof file here")
    parser.add_argument("--sql", action="store_true", help="also count SQLite statements per call")
    parser.add_argument("--sort", choices=("both", "tottime", "cumulative"), default="both")
    args = parser.parse_args()
    emulator = Emulator().start()
    emulator.add(upstream_path("openai"), openai_completion("I'm fine, thanks.", 12, 6))
    try:
        with tempfile.TemporaryDirectory(prefix="zw-profile-gw-") as tmp:
            out = args.out or Path(tmp) / "gateway.prof"
            setup = prepare_unbound_gateway(Path(tmp), emulator)
            profiler = (str(ROOT / "bench" / "_profiled.py"), str(out.resolve()))
            env = {"ZW_PROFILE_SQL": "1"} if args.sql else None
            with served(setup.config, setup.home, python_args=profiler, env=env) as server:
                asyncio.run(gateway_calls(server.url, setup.token, 80, args.clients))  # warm-up
                os.kill(server.pid, signal.SIGUSR1)
                asyncio.run(gateway_calls(server.url, setup.token, args.n, args.clients))
                os.kill(server.pid, signal.SIGUSR2)
                for _ in range(100):
                    if out.exists():
                        break
                    time.sleep(0.1)
                time.sleep(0.5)
            n = max(1, args.n // args.clients) * args.clients
            stats = pstats.Stats(str(out))
            print(
                f"{n} gateway calls; profiled CPU per call: {stats.total_tt / n * 1000:.2f} ms (cProfile-inflated)\n"
            )
            print("own time by package (%):", json.dumps(by_package(stats)), "\n")
            if args.sql:
                counted = json.loads(Path(str(out) + ".sql.json").read_text(encoding="utf-8"))
                print(f"SQLite statements per call: {sum(c for _, c in counted) / n:.1f}")
                for text, count in counted:
                    print(f"  {count / n:5.2f}  {text}")
                print()
            for key in ("tottime", "cumulative"):
                if args.sort in (key, "both"):
                    stats.sort_stats(key).print_stats(args.top)
    finally:
        emulator.stop()


if __name__ == "__main__":
    main()

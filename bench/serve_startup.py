"""The CPU a `zarniwoop serve` costs to start and stop, against `python -c "import fastapi, uvicorn"`.

    python bench/serve_startup.py [--runs 7] [--baseline-src /path/to/old/checkout/src]

Each run spawns `zarniwoop serve --port 0 --no-probes` on a fresh home, waits for its banner, sends
SIGTERM and reads the child's CPU time (user + system, `os.wait4`): what every server start of the
test suite, of a replica or of a restarted worker pays. The peer is the floor of any FastAPI server
on uvicorn: a fresh interpreter importing both. With `--baseline-src`, the same server from another
source tree (e.g. a worktree of an older commit) runs too. One warm-up run of each first (bytecode
caches), then they alternate run by run so that load on the machine hits all alike; the figures are
medians and their ratios in the same run.

Prints JSON: samples and medians in seconds of CPU, the banner's wall time, and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.support

from tests.support.runtime import endpoint, only, write_config  # noqa: E402
from tests.support.served import READY_LINE, serve_command, server_env  # noqa: E402


def _cpu_of(process: subprocess.Popen[str]) -> float:
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0  # reaped here: keep Popen from waiting again
    return usage.ru_utime + usage.ru_stime


def serve_once(folder: Path, src: Path) -> tuple[float, float]:
    """CPU seconds of one start and stop, and the wall seconds to the banner."""
    folder.mkdir()
    config = write_config(
        folder, {"settings": {**only(), **endpoint("wiki", "wikipedia", "http://127.0.0.1:9/w")}}
    )
    env = server_env(folder / "home", {"PYTHONPATH": str(src)})
    command = serve_command("--config", str(config), "serve", "--port", "0", "--no-probes")
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if READY_LINE in line:
            break
    else:
        raise SystemExit(f"the server from {src} ended before its banner")
    banner = time.perf_counter() - started
    process.send_signal(signal.SIGTERM)
    return _cpu_of(process), banner


def peer_once() -> float:
    process = subprocess.Popen([sys.executable, "-c", "import fastapi, uvicorn"], text=True)
    return _cpu_of(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline-src", type=Path, default=None, help="another checkout's src/")
    args = parser.parse_args()
    trees = {
        "serve": ROOT / "src",
        **({"baseline": args.baseline_src.resolve()} if args.baseline_src else {}),
    }
    cpu: dict[str, list[float]] = {name: [] for name in [*trees, "peer"]}
    banner: dict[str, list[float]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs + 1):  # run 0: the warm-up, not counted
            for name, src in trees.items():
                seconds, ready = serve_once(Path(tmp) / f"{name}-{run}", src)
                if run:
                    cpu[name].append(seconds)
                    banner[name].append(ready)
            seconds = peer_once()
            if run:
                cpu["peer"].append(seconds)
    medians = {name: statistics.median(samples) for name, samples in cpu.items()}
    report: dict[str, object] = {
        "runs": args.runs,
        **{
            name: {
                "cpuMedianS": round(medians[name], 3),
                "cpuSamplesS": [round(s, 3) for s in samples],
                **({"bannerMedianS": round(statistics.median(banner[name]), 3)} if name in banner else {}),
            }
            for name, samples in cpu.items()
        },
        "serveOverPeer": round(medians["serve"] / medians["peer"], 3),
        "loadAverage": os.getloadavg()[0],
    }
    if "baseline" in medians:
        report["serveOverBaseline"] = round(medians["serve"] / medians["baseline"], 3)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

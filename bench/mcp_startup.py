"""How long `zarniwoop mcp` (stdio) takes to answer `initialize`, against `python -c "import mcp.server"`.

    python bench/mcp_startup.py [--runs 5] [--config PATH]

Each run spawns a fresh interpreter. `zarniwoop mcp` is timed from spawn to the `initialize` answer
on its stdout (the request is written at once, as an MCP host does); the baseline from spawn to the
exit of `python -c "import mcp.server"`. One warm-up run of each first (bytecode, the database
under a temporary `ZARNIWOOP_HOME`), then the two alternate run by run so that load on the machine
hits both alike. The figure is the ratio of the medians in the same run (issue 26's budget: ≤ 1.25).
A `tools/list` right after `initialize` is timed too (it needs no runtime either); a search would
need the runtime, which `zarniwoop mcp` opens after answering `initialize`.

Prints JSON: the samples and medians in seconds and `ratio`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.support

from tests.support.mcp_stdio import INITIALIZE, INITIALIZED, TOOLS_LIST  # noqa: E402


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZARNIWOOP_")}
    env["ZARNIWOOP_HOME"] = str(home)
    env.setdefault("PYTHONPATH", str(ROOT / "src"))
    return env


def time_import(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp.server"], env=env, check=True)
    return time.perf_counter() - started


def time_initialize(env: dict[str, str], config: str | None) -> tuple[float, float]:
    """Seconds to the `initialize` answer, and to the `tools/list` answer after it."""
    command = [sys.executable, "-m", "zarniwoop", *(["--config", config] if config else []), "mcp"]
    started = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(json.dumps(INITIALIZE) + "\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        initialized = time.perf_counter() - started
        assert answer.get("id") == 1 and "result" in answer, answer
        process.stdin.write(json.dumps(INITIALIZED) + "\n" + json.dumps(TOOLS_LIST) + "\n")
        process.stdin.flush()
        listed = json.loads(process.stdout.readline())
        assert len(listed["result"]["tools"]) == 5, listed
        return initialized, time.perf_counter() - started
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--config", default=None, help="a zarniwoop.yaml for `zarniwoop mcp`")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = _env(Path(tmp) / "home")
        time_import(env)
        time_initialize(env, args.config)  # warm-up: bytecode, the database's migrations
        imports: list[float] = []
        inits: list[float] = []
        lists: list[float] = []
        for _ in range(args.runs):
            imports.append(time_import(env))
            initialized, listed = time_initialize(env, args.config)
            inits.append(initialized)
            lists.append(listed)
    baseline, ours = statistics.median(imports), statistics.median(inits)
    print(
        json.dumps(
            {
                "runs": args.runs,
                "importMcpServer": {
                    "medianS": round(baseline, 3),
                    "samplesS": [round(s, 3) for s in imports],
                },
                "mcpInitialize": {"medianS": round(ours, 3), "samplesS": [round(s, 3) for s in inits]},
                "mcpToolsList": {"medianS": round(statistics.median(lists), 3)},
                "ratio": round(ours / baseline, 3),
                "loadAverage": os.getloadavg()[0],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

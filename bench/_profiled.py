"""Run `python -m zarniwoop …` with cProfile switched on and off by signals (bench/profile_serve.py).

    python bench/_profiled.py OUT.prof -m zarniwoop serve …    # SIGUSR1: start, SIGUSR2: stop and write

So the profile holds the load only: not the imports, pydantic schema builds and warm-up of start-up.
"""

from __future__ import annotations

import cProfile
import runpy
import signal
import sys
from types import FrameType


def main() -> None:
    out, flag, module, *rest = sys.argv[1:]
    assert flag == "-m", "usage: _profiled.py OUT.prof -m MODULE ARGS…"
    profiler = cProfile.Profile()

    def start(_signum: int, _frame: FrameType | None) -> None:
        profiler.enable()

    def stop(_signum: int, _frame: FrameType | None) -> None:
        profiler.disable()
        profiler.dump_stats(out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    sys.argv = [module, *rest]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

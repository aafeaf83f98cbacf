"""Run `python -m zarniwoop …` with cProfile switched on and off by signals (bench/profile_serve.py).

    python bench/_profiled.py OUT.prof -m zarniwoop serve …    # SIGUSR1: start, SIGUSR2: stop and write

So the profile holds the load only: not the imports, pydantic schema builds and warm-up of start-up.
"""

from __future__ import annotations

import collections
import cProfile
import json
import os
import re
import runpy
import signal
import sqlite3
import sys
from types import FrameType
from typing import Any


def _shape(sql: str) -> str:
    """A statement without its literals, so one kind of statement counts as one line."""
    return re.sub(r"'[^']*'|\b\d+(\.\d+)?\b", "?", " ".join(sql.split()))[:200]


def main() -> None:
    out, flag, module, *rest = sys.argv[1:]
    assert flag == "-m", "usage: _profiled.py OUT.prof -m MODULE ARGS…"
    profiler = cProfile.Profile()
    # ZW_PROFILE_SQL=1: also count the SQLite statements run while profiling, by text, into OUT.sql.json
    statements: collections.Counter[str] | None = (
        collections.Counter() if os.environ.get("ZW_PROFILE_SQL") else None
    )
    counting = False
    if statements is not None:
        connect = sqlite3.connect

        def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = connect(*args, **kwargs)
            conn.set_trace_callback(lambda sql: statements.update([_shape(sql)]) if counting else None)
            return conn

        sqlite3.connect = traced  # type: ignore[assignment]

    def start(_signum: int, _frame: FrameType | None) -> None:
        nonlocal counting
        counting = True
        profiler.enable()

    def stop(_signum: int, _frame: FrameType | None) -> None:
        nonlocal counting
        counting = False
        profiler.disable()
        if statements is not None:
            with open(out + ".sql.json", "w", encoding="utf-8") as f:
                json.dump(statements.most_common(), f, indent=1)
        profiler.dump_stats(out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    sys.argv = [module, *rest]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

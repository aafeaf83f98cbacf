"""The CLI in-process (`zarniwoop.surfaces.cli:app` through typer's runner), answering as a process
of it would: its exit code, its stdout, and on stderr what it printed there *and* what it logged.

    ran = run_cli("--config", str(config), "search", "q", "--json", home=home, env={"EXA_API_KEY": "k"})
    ran.code, json.loads(ran.stdout), ran.stderr

A process of the CLI configures no logging (without `--debug`), so its warnings and errors reach
stderr through logging's last resort; under pytest the root logger has pytest's handlers and the
last resort never fires, so a handler of the same level and format stands in for it here. The
runner swaps `sys.stdout`/`sys.stderr` for the call: one call at a time, never from two threads.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str
    """What the command wrote on stderr, then what it logged at WARNING or above."""


def run_cli(*args: str, home: Path | None = None, env: Mapping[str, str] | None = None) -> Ran:
    """`home`: ZARNIWOOP_HOME for the call; `env`: further variables, set for the call only. An
    exception the CLI's error boundary does not turn into an exit code is raised, not summarised."""
    variables = {**({"ZARNIWOOP_HOME": str(home)} if home is not None else {}), **(env or {})}
    logged = io.StringIO()
    last_resort = logging.StreamHandler(logged)  # logging.lastResort's level and bare-message format
    last_resort.setLevel(logging.WARNING)
    root = logging.getLogger()
    root.addHandler(last_resort)
    try:
        result = CliRunner().invoke(app, list(args), env=variables, catch_exceptions=False)
    finally:
        root.removeHandler(last_resort)
    return Ran(result.exit_code, result.stdout, result.stderr + logged.getvalue())

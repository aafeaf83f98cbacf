"""The CLI in-process (`zarniwoop.surfaces.cli:app` through typer's runner), answering as a process
of it would: its exit code, its stdout, and on stderr what it printed there *and* what it logged.

    ran = run_cli("--config", str(config), "search", "q", "--json", home=home, env={"EXA_API_KEY": "k"})
    ran.code, json.loads(ran.stdout), ran.stderr

    never_serve(monkeypatch)      # before a `serve` that must refuse to start: if it did not, it fails

A process of the CLI configures no logging (without `--debug`), so its warnings and errors reach
stderr through logging's last resort; under pytest the root logger has pytest's handlers and the
last resort never fires, so a handler like it (level, bare message, whatever `sys.stderr` is when
a record comes: the runner's) stands in for it, in the order a process would print. The runner
swaps `sys.stdout`/`sys.stderr` for the call: one call at a time, never from two threads.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app
from zarniwoop.surfaces.cli import serve as serve_cli
from zarniwoop.surfaces.cli import workers as workers_cli


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str
    """What the command wrote on stderr, with what it logged at WARNING or above in between."""


class _LastResort(logging.StreamHandler):  # type: ignore[type-arg]
    """`logging.lastResort`'s twin: WARNING and above, the bare message, on the current stderr."""

    def __init__(self) -> None:
        super().__init__()
        self.setLevel(logging.WARNING)

    @property  # type: ignore[override]
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:  # StreamHandler.__init__ sets one: the property wins
        pass


def run_cli(*args: str, home: Path | None = None, env: Mapping[str, str] | None = None) -> Ran:
    """`home`: ZARNIWOOP_HOME for the call; `env`: further variables, set for the call only. An
    exception the CLI's error boundary does not turn into an exit code is raised, not summarised."""
    variables = {**({"ZARNIWOOP_HOME": str(home)} if home is not None else {}), **(env or {})}
    last_resort = _LastResort()
    root = logging.getLogger()
    root.addHandler(last_resort)

    def invoke() -> Result:
        return CliRunner().invoke(app, list(args), env=variables, catch_exceptions=False)

    try:
        if _loop_running():  # the CLI calls asyncio.run, which a thread running a loop (an async
            with ThreadPoolExecutor(1) as thread:  # test, playwright's sync API) may not call
                result = thread.submit(invoke).result()
        else:
            result = invoke()
    finally:
        root.removeHandler(last_resort)
    return Ran(result.exit_code, result.stdout, result.stderr)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def never_serve(monkeypatch: pytest.MonkeyPatch, *, bind: bool = False) -> None:
    """For an in-process `serve` that must refuse to start: binding its socket fails the test (a
    process of it that did start would be killed by its test; in-process it would serve on).
    `bind=True` for a refusal that comes from binding (a port in use): then serving, or starting
    workers, fails the test instead."""

    def bound(host: str, port: int, **_: object) -> None:
        raise AssertionError(f"serve bound {host}:{port} where it should have refused to start")

    def served(*_: object, **__: object) -> None:
        raise AssertionError("serve went on to serve where it should have refused to start")

    if not bind:
        monkeypatch.setattr(serve_cli, "_bind", bound)
    monkeypatch.setattr(serve_cli, "_announcing_server", served)
    monkeypatch.setattr(workers_cli, "supervise", served)

"""Skips that CI accepts: with `ZARNIWOOP_ALLOWED_SKIPS=<file>` (.ci/run sets it to
tests/allowed-skips.txt), a test that skips for a reason the file does not list fails the run.

A skip is how a test says "this machine lacks X"; on CI, which installs everything the suite needs,
an unlisted skip is a missing install step or a broken fixture, and a green run would hide it (the
multi-replica tests once passed CI as skips on a machine without haproxy). A developer's own run is
not strict: without the variable nothing changes.

The file: one entry a line, `<node id or its prefix>  # why it may skip on CI`; blank lines and lines
starting with `#` are comments. An entry without a reason is an error, so that every exception
says why it is one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "ZARNIWOOP_ALLOWED_SKIPS"


def read_allowed(path: Path) -> dict[str, str]:
    """Node id prefix -> why it may skip."""
    allowed: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        prefix, _, why = line.partition("#")
        if not prefix.strip() or not why.strip():
            raise pytest.UsageError(f"{path}:{number}: expected '<node id>  # why it may skip', got {line!r}")
        allowed[prefix.strip()] = why.strip()
    return allowed


class SkipCheck:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.allowed = read_allowed(path)
        self.listed = 0
        self.unlisted: list[tuple[str, str]] = []  # (node id, the skip's reason)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.skipped or hasattr(report, "wasxfail"):
            return
        if any(report.nodeid.startswith(prefix) for prefix in self.allowed):
            self.listed += 1
            return
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        self.unlisted.append((report.nodeid, reason))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.unlisted and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        for nodeid, reason in self.unlisted:
            terminalreporter.write_line(f"unlisted skip: {nodeid}: {reason}", red=True)
        terminalreporter.write_line(
            f"skip check ({self.path.name}): {self.listed} listed, {len(self.unlisted)} unlisted"
        )


def pytest_configure(config: pytest.Config) -> None:
    path = os.environ.get(ENV)
    # the controller (or the one process under -n 0) judges; xdist workers only report to it
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(SkipCheck(Path(path)), "zarniwoop-skip-check")

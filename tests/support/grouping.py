"""The grouping check: under `-n`, every test module marked `xdist_group` must run on one worker.

A grouped module holds one module-scoped server, replica set or browser: run on two workers it is
set up twice, and a test that relies on its sibling's state (tests/test_async_loop.py) fails. The
grouping itself is xdist's `--dist loadfile` (pyproject's addopts): a whole module goes to one
worker. It replaced `--dist loadgroup`, which pytest 9.2 silently switched off (xdist 3.8 writes
the group into `item._nodeid`, which pytest no longer reads). This plugin does not trust either:
it reads which worker ran each test from the reports the controller receives, and fails the run,
naming the module and its workers, when a grouped module ran on more than one.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

_workers_of: defaultdict[str, set[str]] = defaultdict(set)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    node = getattr(report, "node", None)  # set by xdist's controller on a worker's report
    if node is None or "xdist_group" not in report.keywords:
        return
    _workers_of[report.nodeid.split("::", 1)[0]].add(node.gateway.id)


def split_groups() -> dict[str, list[str]]:
    """Each grouped module that ran on more than one worker, with those workers."""
    return {module: sorted(ids) for module, ids in sorted(_workers_of.items()) if len(ids) > 1}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    if split_groups() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _workers_of:
        return
    split = split_groups()
    if not split:
        terminalreporter.write_line(
            f"grouping check: {len(_workers_of)} xdist_group modules, each on one worker"
        )
        return
    for module, workers in split.items():
        terminalreporter.write_line(
            f"grouping check FAILED: {module} is one xdist_group but ran on {', '.join(workers)}",
            red=True,
        )

"""The grouping check (tests/support/grouping.py) against a planted split: a module marked
`xdist_group` that xdist spreads over two workers fails the run, naming the module and workers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
_PLANTED = """
import pytest

pytestmark = pytest.mark.xdist_group("planted")

@pytest.mark.parametrize("n", range(12))
def test_one(n):
    assert n >= 0

def test_ungrouped_elsewhere():
    pass
"""


def _run(folder: Path, dist: str) -> subprocess.CompletedProcess[str]:
    (folder / "conftest.py").write_text('pytest_plugins = ["tests.support.grouping"]\n')
    (folder / "test_planted.py").write_text(_PLANTED)
    env = {**os.environ, "PYTHONPATH": str(_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", dist,
         "--rootdir", str(folder), str(folder)],
        cwd=folder, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_a_group_split_over_two_workers_fails_the_run_naming_it(tmp_path: Path) -> None:
    # `--dist load` hands the module's tests out one by one: both workers get some at the start
    run = _run(tmp_path, "load")
    assert run.returncode == 1, run.stdout
    assert "13 passed" in run.stdout
    assert "grouping check FAILED: test_planted.py is one xdist_group but ran on gw0, gw1" in run.stdout


def test_the_suites_distribution_keeps_a_group_on_one_worker(tmp_path: Path) -> None:
    run = _run(tmp_path, "loadfile")
    assert run.returncode == 0, run.stdout
    assert "grouping check: 1 xdist_group modules, each on one worker" in run.stdout

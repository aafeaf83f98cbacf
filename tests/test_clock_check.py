"""`scripts/check_test_clock.py` (issue 41): a decision by the clock planted in a test is named by
file and line, what the checker must let through is let through, and tests/ has none."""

from __future__ import annotations

import importlib.util
import os
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from .support.paths import REPO_ROOT


def _checker() -> ModuleType:
    """The script's package, scripts/clock_check, imported in-process (scripts/ is not a package)."""
    package = REPO_ROOT / "scripts" / "clock_check"
    spec = importlib.util.spec_from_file_location(
        "clock_check", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its modules import one another by it; dataclasses look it up
    spec.loader.exec_module(module)
    return module


checker = _checker()


def _plant(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "test_planted.py"
    path.write_text("import asyncio\nimport time\n\n\n" + textwrap.dedent(body))
    return path


def test_a_planted_upper_bound_fails_the_check_naming_its_file_and_line(tmp_path, capsys):
    planted = _plant(
        tmp_path,
        """\
        def test_fast():
            t0 = time.monotonic()
            sum(range(10))
            assert time.monotonic() - t0 < 2.0
        """,
    )
    report = checker.check([planted], allowlist=None)
    assert [(f.path, f.line, f.rule) for f in report.findings] == [(str(planted), 8, "upper-bound")]
    assert not report.ok

    assert checker.main([str(planted), "--allowlist", os.devnull]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith(f"{planted}:8: upper-bound: ")


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        # a duration bound to a name, compared lines later, the bound on either side
        ("took = time.perf_counter() - t0\nx = 1\nassert took <= 5", "upper-bound"),
        ("elapsed = round(time.time() - t0, 2)\nassert 5 > elapsed", "upper-bound"),
        ("t1 = time.monotonic()\nassert t1 - t0 < healthy * 2", "upper-bound"),
        ("assert 3.0 - (time.monotonic() - t0) > 0", "upper-bound"),  # time left, bounded below
        ("assert time.monotonic() < t0 + 5", "upper-bound"),
        # the age of a stamp read from elsewhere
        (
            "from datetime import datetime\nassert abs(datetime.now().timestamp() - row.at) < 60",
            "upper-bound",
        ),
        ("deadline = time.monotonic() + 5\nwhile time.monotonic() < deadline:\n    pass", "short-deadline"),
        ("while time.monotonic() - t0 < 10:\n    pass", "short-deadline"),
        ("for _ in range(100):\n    if done():\n        break\n    time.sleep(0.05)", "short-deadline"),
        ("process.wait(timeout=5)", "short-wait"),
        ("thread.join(10)", "short-wait"),
        ("async with asyncio.timeout(5):\n    pass", "short-wait"),
        ("time.sleep(0.5)", "fixed-sleep"),
        ("await asyncio.sleep(1)", "fixed-sleep"),
        # the test's own body, nested: still the test waiting
        ("async def scenario():\n    await asyncio.sleep(1)\nawait scenario()", "fixed-sleep"),
    ],
)
def test_each_kind_of_decision_by_the_clock_is_flagged(tmp_path, body, rule):
    planted = _plant(
        tmp_path, "async def test_x(process, thread, healthy, done, row):\n    t0 = time.monotonic()\n"
    )
    planted.write_text(planted.read_text() + textwrap.indent(body, "    ") + "\n")
    assert [f.rule for f in checker.check([planted], allowlist=None).findings] == [rule]


@pytest.mark.parametrize(
    "body",
    [
        "assert time.monotonic() - t0 >= 0.3",  # a lower bound: a busy machine only adds to it
        "assert 0.3 <= time.monotonic() - t0",
        "assert t0 <= stamp <= time.monotonic()",  # an in-test bracket of the product's stamp
        "from datetime import datetime\nbefore = datetime.now()\nassert before <= stamp <= datetime.now()",
        "assert time.monotonic() - MARGIN >= t0",  # a reading moved back by a constant: a lower bound
        "while time.monotonic() - t0 < 60:\n    time.sleep(0.1)",  # a generous poll, paced
        "deadline = time.monotonic() + 60",
        "process.wait(timeout=60)",
        # a producer's pace, stopped by an error at most: no condition awaited
        "for _ in range(64):\n    try:\n        send()\n    except OSError:\n        break\n    time.sleep(0.005)",
        "await asyncio.sleep(0)",  # a yield, not a wait
        "time.sleep(max(0.0, start_at - time.time()))",  # until an instant: at least that long
        "async def upstream():\n    await asyncio.sleep(2)  # latency a stand-in simulates",
        "httpx.get(url, timeout=5)",  # a client's budget, not a wait of the test's
    ],
)
def test_what_no_machine_can_decide_is_let_through(tmp_path, body):
    planted = _plant(
        tmp_path, "async def test_x(stamp, start_at, process, httpx, url, send):\n    t0 = time.monotonic()\n"
    )
    planted.write_text(planted.read_text() + textwrap.indent(body, "    ") + "\n")
    assert checker.check([planted], allowlist=None).findings == []


def test_the_allowlist_takes_a_function_with_a_reason_and_reports_a_stale_entry(tmp_path):
    planted = _plant(tmp_path, "def test_x():\n    time.sleep(1)\n")
    allow = tmp_path / "allow.txt"
    allow.write_text(f"{planted}::test_x  # why: lower bound\n")
    report = checker.check([planted], allowlist=allow)
    assert report.ok and [f.line for f in report.allowed] == [6]

    allow.write_text(f"{planted}::test_x\n")  # no reason: not an entry
    assert [f.line for f in checker.check([planted], allowlist=allow).findings] == [6]

    planted.write_text("def test_x():\n    pass\n")
    allow.write_text(f"{planted}::test_x  # why: lower bound\n")
    assert checker.check([planted], allowlist=allow).problems == [
        f"{allow}:1: allow-list entry matches nothing: {planted}::test_x"
    ]


def test_the_suite_decides_nothing_by_the_clock():
    report = checker.check([REPO_ROOT / "tests"])
    assert report.findings == [] and report.problems == [], "\n".join(
        [*map(str, report.findings), *report.problems]
    )
    assert report.files > 100

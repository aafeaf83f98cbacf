"""The process guard and count (tests/support/processes.py) against planted tests, run in this
process (`runpytest_inprocess`): a test not marked `process` that starts one fails, naming itself
and the command, and the process is never created; the count is printed at the end."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .support.processes import _starts, starts_process
from .support.served import served

pytest_plugins = ["pytester"]

_ROOT = Path(__file__).resolve().parents[1]
_CONFTEST = 'pytest_plugins = ["tests.support.processes"]\n'

# Each body tries to create a process that would leave `{proof}` behind, by one of the ways the
# guard watches, in one of the phases of a test (and once swallowing the error, as a library does).
_STARTS = {
    "subprocess": "subprocess.run(['touch', {proof!r}])",
    "swallowed": "try:\n        subprocess.run(['touch', {proof!r}])\n    except Exception:\n        pass",
    "os.system": "os.system('touch {proof}')",
    "asyncio": "asyncio.run(asyncio.create_subprocess_exec('touch', {proof!r}))",
    "multiprocessing spawn": (
        "p = multiprocessing.get_context('spawn').Process(target=os.getpid)\n    p.start()\n    p.join()"
    ),
}
# Plugins the planted run does without: it has no pyproject to turn them off, and loading them
# took 3 s of each run here.
_OFF = (
    "cacheprovider",
    "benchmark",
    "schemathesis",
    "langsmith_plugin",
    "xdist",
    "anyio",
    "hypothesispytest",
)
_IMPORTS = "import asyncio, multiprocessing, os, subprocess\nimport pytest\n"


def _planted_run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(test_planted=_IMPORTS + body)
    return pytester.runpytest_inprocess(*(f"-pno:{name}" for name in _OFF), *args)


@pytest.mark.parametrize("way", _STARTS)
def test_an_unmarked_test_that_starts_a_process_fails_naming_it_and_none_starts(
    pytester: pytest.Pytester, tmp_path: Path, way: str
) -> None:
    proof = tmp_path / "started"
    start = _STARTS[way].format(proof=str(proof))
    result = _planted_run(pytester, f"def test_starts():\n    {start}\n\ndef test_quiet():\n    pass\n")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_planted.py::test_starts is not marked `process`*"])
    if way != "multiprocessing spawn":  # its command is Python's own, with the child's arguments
        assert "touch" in result.stdout.str()
    result.stdout.fnmatch_lines(
        ["process starts: 0 (by 0 of 0 tests marked process; blocked in 1 unmarked tests)"]
    )
    assert not proof.exists()


@pytest.mark.parametrize("phase", ["setup", "teardown"])
def test_a_start_in_a_fixture_fails_the_test_in_that_phase(
    pytester: pytest.Pytester, tmp_path: Path, phase: str
) -> None:
    proof = tmp_path / "started"
    start = f"subprocess.run(['touch', {str(proof)!r}])"
    fixture = f"    {start}\n    yield\n" if phase == "setup" else f"    yield\n    {start}\n"
    body = f"@pytest.fixture\ndef helper():\n{fixture}\ndef test_uses_it(helper):\n    pass\n"
    result = _planted_run(pytester, body)
    result.assert_outcomes(**{"passed": 1, "errors": 1} if phase == "teardown" else {"errors": 1})
    result.stdout.fnmatch_lines([f"*at {phase} of test_uses_it*", "*test_uses_it is not marked `process`*"])
    assert not proof.exists()


def test_a_start_blocked_after_the_tests_last_phase_fails_the_run(pytester: pytest.Pytester) -> None:
    # after teardown, still inside the test's run (a thread it left behind would start one here)
    pytester.makeconftest(
        _CONFTEST + "import subprocess\n\n"
        "def pytest_runtest_logfinish():\n"
        "    try:\n"
        "        subprocess.run(['true'])\n"
        "    except Exception:\n"
        "        pass\n"
    )
    pytester.makepyfile(test_planted="def test_quiet():\n    pass\n")
    result = pytester.runpytest_inprocess(*(f"-pno:{name}" for name in _OFF))
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["process start BLOCKED in test_planted.py::test_quiet: 'true' from *"])


def test_the_fast_tier_of_a_planted_suite_starts_nothing(pytester: pytest.Pytester) -> None:
    body = "@pytest.mark.process\ndef test_server():\n    subprocess.run(['true'])\n\ndef test_logic():\n    pass\n"
    result = _planted_run(pytester, body, "-m", "not process")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["process starts: 0 (by 0 of 0 tests marked process;*"])


def test_a_fixture_that_marks_its_process_params_keeps_its_other_params_in_the_fast_tier(
    pytester: pytest.Pytester,
) -> None:
    body = (
        "from tests.support.processes import starts_process\n\n"
        "@pytest.fixture(params=['app', pytest.param('serve', marks=pytest.mark.process)])\n"
        "@starts_process\n"
        "def target(request):\n"
        "    if request.param == 'serve':\n"
        "        subprocess.run(['true'])\n"
        "    return request.param\n\n"
        "def test_answers(target):\n    assert target in ('app', 'serve')\n"
    )
    result = _planted_run(pytester, body, "-m", "not process", "-v")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["*test_answers?app? PASSED*"])


@pytest.mark.process  # runs a planted test that starts a process: nothing in its code shows that
def test_a_marked_test_may_start_processes_and_they_are_counted(pytester: pytest.Pytester) -> None:
    body = (
        "@pytest.mark.process\ndef test_server():\n    subprocess.run(['true'])\n    os.system('true')\n\n"
        "@pytest.mark.process\ndef test_skipped():\n    pytest.skip('no server here')\n\n"
        "def test_logic():\n    pass\n"
    )
    result = _planted_run(pytester, body)
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(
        ["process starts: 2 (by 1 of 2 tests marked process; blocked in 0 unmarked tests)"]
    )


@pytest.mark.process  # runs pytest with two xdist workers, as a process
def test_under_xdist_each_workers_count_reaches_the_controller(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(_ROOT), os.environ.get("PYTHONPATH", "")]))
    pytester.makeconftest(_CONFTEST)
    marked = "@pytest.mark.process\ndef test_marked_{}():\n    subprocess.run(['true'])\n\n"
    unmarked = "def test_unmarked():\n    subprocess.run(['true'])\n"
    pytester.makepyfile(test_planted=_IMPORTS + "".join(map(marked.format, range(3))) + unmarked)
    plugins_off = (f"-pno:{name}" for name in _OFF if name != "xdist")
    result = pytester.runpytest_subprocess(*plugins_off, "-n", "2", "--dist", "load")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "process starts: 3 (by 3 of 3 tests marked process; blocked in 1 unmarked tests)",
            "process start BLOCKED in test_planted.py::test_unmarked: 'true' from test_planted.py:*",
        ]
    )


# --- the marking: what the scan at collection sees --------------------------------------------


@starts_process
def _declared() -> None:
    """Starts a process through code the scan cannot read (the product's, say)."""


def _calls_the_declared_one() -> None:
    _declared()


def _runs_a_subprocess() -> None:
    subprocess.run(["true"], check=True)


def _calls_it_in_a_lambda() -> object:
    return lambda: _runs_a_subprocess()


def _plain() -> int:
    return len(str(_plain))


def _recursive(n: int) -> int:
    return n and _recursive(n - 1)


# Reached through a dict: a test naming a starter in its own code would be marked `process` itself.
_HELPERS = {
    "declared": _declared,
    "calls the declared one": _calls_the_declared_one,
    "runs a subprocess": _runs_a_subprocess,
    "calls it in a lambda": _calls_it_in_a_lambda,
    "the suite's server": served,  # declared, and a context manager
    "plain": _plain,
    "recursive": _recursive,
}


@pytest.mark.parametrize("name", _HELPERS)
def test_the_scan_finds_starters_through_helpers_and_nested_code(name: str) -> None:
    assert _starts(_HELPERS[name]) is (name not in ("plain", "recursive"))


def test_a_test_that_only_names_a_helper_in_data_is_not_marked(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("process") is None

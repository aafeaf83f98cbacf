"""The skip check (tests/support/skips.py): on CI a skip the allow-list does not name fails the run,
naming the test and its reason; a listed one passes; without the variable nothing is strict."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support.skips import ENV

pytest_plugins = ["pytester"]

_PLANTED = """
import pytest

def test_needs_a_tool():
    pytest.skip("frobnicator is not installed")

@pytest.mark.skipif(True, reason="root reads every folder")
def test_as_root():
    pass

def test_runs():
    assert 1 + 1 == 2
"""


# the suite's own addopts do not reach pytester's folder: leave out the same unused plugins
_QUIET = ("-p", "no:cacheprovider", "-p", "no:schemathesis", "-p", "no:langsmith_plugin")


@pytest.fixture
def planted(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest('pytest_plugins = ["tests.support.skips"]\n')
    pytester.makepyfile(test_planted=_PLANTED)
    return pytester


def _run(
    planted: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, allowed: Path | None, entries: str = ""
) -> pytest.RunResult:
    """The planted run, strict with `entries` as its allow-list, or not strict when `allowed` is None."""
    if allowed is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        allowed.write_text(entries)
        monkeypatch.setenv(ENV, str(allowed))
    return planted.runpytest_inprocess(*_QUIET)


def test_an_unlisted_skip_fails_the_run_naming_it(
    planted: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    entries = "# comment\ntest_planted.py::test_as_root  # CI runs as root\n"
    result = _run(planted, monkeypatch, tmp_path / "allowed.txt", entries)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "unlisted skip: test_planted.py::test_needs_a_tool: Skipped: frobnicator is not installed",
            "skip check (allowed.txt): 1 listed, 1 unlisted",
        ]
    )


def test_listed_skips_pass(planted: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    entries = "test_planted.py::test_as_root  # CI runs as root\ntest_planted.py::test_needs  # no tool\n"
    result = _run(planted, monkeypatch, tmp_path / "allowed.txt", entries)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["skip check (allowed.txt): 2 listed, 0 unlisted"])


def test_an_entry_without_a_reason_is_refused(
    planted: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    allowed = tmp_path / "allowed.txt"
    result = _run(planted, monkeypatch, allowed, "test_planted.py::test_as_root\n")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{allowed}:1: expected '<node id>  # why it may skip'*"])


def test_without_the_variable_a_skip_is_only_a_skip(
    planted: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(planted, monkeypatch, None)
    assert result.ret == pytest.ExitCode.OK
    assert "skip check" not in result.stdout.str()

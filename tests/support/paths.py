"""Where the shared recorded provider bodies live (`../shared/fixtures` from the repo root).

Every test that asks for them is noted (`readers`): with `ZARNIWOOP_SHARED_READERS=DIR` set, the
suite writes their node ids to `DIR/<worker>.txt` at its end, and `.ci/run` runs just those again
on a clone with no ../shared beside it — where they must skip, saying why, or pass without it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TESTS = REPO_ROOT / "tests"


current_test: str | None = None
"""The node id of the test running in this process (set by tests/conftest.py), for `readers`."""
readers: set[str] = set()
"""Node ids of the tests that asked where ../shared is, this run."""


def shared_fixtures() -> Path | None:
    """`ZARNIWOOP_SHARED_FIXTURES`, else `<repo>/../shared/fixtures`; None when absent."""
    if current_test is not None:
        readers.add(current_test)
    explicit = os.environ.get("ZARNIWOOP_SHARED_FIXTURES")
    candidate = Path(explicit) if explicit else REPO_ROOT.parent / "shared" / "fixtures"
    return candidate if candidate.is_dir() else None


def fixture_path(*parts: str) -> Path:
    """Path of a shared fixture, or skip the test with a visible reason when the folder is absent."""
    base = shared_fixtures()
    if base is None:
        pytest.skip("../shared/fixtures is absent: recorded provider bodies are not available here")
    path = base.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"shared fixture {path} is missing")
    return path


def fixture_bytes(*parts: str) -> bytes:
    return fixture_path(*parts).read_bytes()


def optional_fixture_bytes(*parts: str) -> bytes | None:
    """A shared fixture's bytes, or None where ../shared is absent: for emulator routes that a test may
    never reach (a skip cannot be raised from the emulator's thread)."""
    base = shared_fixtures()
    return base.joinpath(*parts).read_bytes() if base is not None else None

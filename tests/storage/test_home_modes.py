"""The home is its owner's alone (issue 46): the database (audit, usage, token hashes, settings)
and the result cache must not be readable by another user of a shared host, as the spool already
was not."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from ..support.runtime import open_runtime

pytestmark = pytest.mark.anyio

DATABASES = ("zarniwoop.db", "cache.db")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def sqlite_files(home: Path) -> list[Path]:
    """Each database file with whichever of SQLite's companions exist."""
    return [p for name in DATABASES for p in home.glob(f"{name}*")]


async def test_a_new_home_is_0700_and_its_database_and_cache_files_0600(tmp_path):
    home = tmp_path / "home"
    async with await open_runtime(tmp_path) as runtime:
        await runtime.db.execute("SELECT 1")
        assert mode(home) == 0o700
        files = sqlite_files(home)
        # While open in WAL mode both files have their -wal and -shm: SQLite gives those the main
        # file's mode, so they are private because the main file was created private.
        assert {p.name for p in files} >= {"zarniwoop.db", "zarniwoop.db-wal", "cache.db", "cache.db-wal"}
        assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}
    assert mode(home / "spool") == 0o700


async def test_an_existing_world_readable_home_is_tightened_at_start_with_one_log_line(tmp_path, caplog):
    home = tmp_path / "home"
    async with await open_runtime(tmp_path):
        pass
    # A home made before the modes were: the directory 0755, its database and cache files 0644.
    home.chmod(0o755)
    for path in sqlite_files(home):
        path.chmod(0o644)
    loose = sorted(p.name for p in sqlite_files(home))

    with caplog.at_level(logging.WARNING, logger="zarniwoop.storage"):
        async with await open_runtime(tmp_path):
            assert mode(home) == 0o700
            assert {p.name: mode(p) for p in sqlite_files(home)} == {
                p.name: 0o600 for p in sqlite_files(home)
            }

    lines = [r.getMessage() for r in caplog.records if "owner-only" in r.getMessage()]
    assert len(lines) == 1
    assert f"home {home} was readable by others" in lines[0]
    assert "home 755→700" in lines[0]
    for name in loose:
        assert f"{name} 644→600" in lines[0]


async def test_a_private_home_is_opened_without_a_log_line(tmp_path, caplog):
    async with await open_runtime(tmp_path):
        pass
    with caplog.at_level(logging.WARNING, logger="zarniwoop.storage"):
        async with await open_runtime(tmp_path):
            pass
    assert not [r for r in caplog.records if "owner-only" in r.getMessage()]

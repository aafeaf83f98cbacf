"""The home's files are the owner's alone: the database holds the audit, usage, token hashes and
settings, the cache holds results, the spool holds audit rows not yet in the database — none of
them for another user of a shared host. Folders are made 0700 and files 0600 here, the one place
that knows the modes (the spool, the SQLite files, the home itself)."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600

SQLITE_NAMES = tuple(f".db{suffix}" for suffix in ("", "-wal", "-shm", "-journal"))
"""A SQLite file in the home and the files SQLite keeps beside it (made with the main file's mode)."""


def private_dir(path: Path) -> None:
    """`path` as a folder only its owner may enter (an existing one is left as it is: see `tighten`)."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)


def open_private(path: str | Path, flags: int) -> int:
    """`os.open` of a file that, if this creates it, only its owner may read or write."""
    return os.open(path, flags | os.O_CREAT, PRIVATE_FILE)


def create_private(path: str | Path) -> None:
    """Create `path` 0600 unless it exists. SQLite creates a new database file 0644 (less the
    umask) and gives its -wal, -shm and -journal files the main file's mode, so a database file
    made here first keeps all four private."""
    os.close(open_private(path, os.O_WRONLY))


def tighten(paths: Iterable[Path]) -> list[str]:
    """Take every group and other permission off each existing path (a folder to 0700, a file to
    0600); what changed, as `name 755→700`, for the start's log line. A path that is not there, a
    symlink, or one not the caller's to change is skipped: a start does not fail over a mode."""
    changed = []
    for path in paths:
        try:
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
                continue
            want = PRIVATE_DIR if stat.S_ISDIR(st.st_mode) else PRIVATE_FILE
            path.chmod(want)
        except OSError:
            continue
        changed.append(f"{path.name} {stat.S_IMODE(st.st_mode):o}→{want:o}")
    return changed


def private_home(home: Path) -> None:
    """Create `home` 0700, or tighten an existing one made before the modes were (0755, its
    database files 0644): the folder and every SQLite file in it with its companions
    (`zarniwoop.db`, `cache.db`, …), logged in one line naming what changed."""
    private_dir(home)
    databases = [p for p in sorted(home.iterdir()) if p.name.endswith(SQLITE_NAMES)]
    changed = tighten([home, *databases])
    if changed:
        log.warning("home %s was readable by others; now owner-only: %s", home, ", ".join(changed))


__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "create_private",
    "open_private",
    "private_dir",
    "private_home",
    "tighten",
]

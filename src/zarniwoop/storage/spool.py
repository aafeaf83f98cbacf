"""A write-ahead spool: records land in a local file before they go to the database.

Why: the audit log must not lose the record of a completed provider call when the process is
killed (`kill -9`) or the database is down, and writing it must not slow the search. One
`os.write` of one JSON line per record costs ~2 µs; once it returns, the bytes are in the
kernel and survive the death of the process. A background task then moves them into the
database in batches. `fsync=True` also survives a power cut, for ~130 µs per record.

Layout under the spool directory (0700):

    <owner>.lock              flock'ed by the living owner process for its whole life
    .<owner>.locking          the lock file in the instant before it is renamed into place
    <owner>.<seq>.jsonl       its segments, oldest first; a segment is deleted once committed

The owner seals its current segment before each flush, so appends never race a flush. A process
whose lock file can be flock'ed is dead: its segments are orphans, claimed and replayed by
whoever flushes next (records carry their own ids, so a replay never writes a row twice).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .private import open_private, private_dir

log = logging.getLogger(__name__)


@dataclass(slots=True)
class OrphanClaim:
    """The segments of a dead owner, held under its lock until `release()`."""

    lock_path: Path
    lock_fd: int
    segments: list[Path]

    def release(self) -> None:
        """Forget the owner once every segment is gone (a failed replay keeps the files)."""
        if not any(p.exists() for p in self.segments):
            with contextlib.suppress(FileNotFoundError):
                self.lock_path.unlink()
        os.close(self.lock_fd)


class Spool:
    def __init__(self, directory: Path, *, fsync: bool = False) -> None:
        self.directory = directory
        self.fsync = fsync
        private_dir(directory)
        self.owner = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._lock_path = directory / f"{self.owner}.lock"
        self._lock_fd = self._take_lock()
        self._seq = 0
        self._fd: int | None = None
        self._current_bytes = 0
        self.appended = 0
        """Records appended by this process (for tests and stats)."""

    def _take_lock(self) -> int:
        # Locked before it is visible as `<owner>.lock`: a lock file created under that name and
        # flock'ed after would look dead to another process's `claim_orphans` in between, which
        # would take it (this owner's flock then fails) or unlink it (its segments replayed and
        # deleted while this owner still appends to them).
        staging = self.directory / f".{self.owner}.locking"
        fd = open_private(staging, os.O_EXCL | os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(staging, self._lock_path)
        return fd

    def _open_segment(self) -> int:
        path = self._segment(self._seq)
        try:
            return open_private(path, os.O_WRONLY | os.O_APPEND)
        except FileNotFoundError:  # the directory was wiped under us: recreate it, and our lock
            private_dir(self.directory)
            os.close(self._lock_fd)
            self._lock_fd = self._take_lock()
            return open_private(path, os.O_WRONLY | os.O_APPEND)

    def _segment(self, seq: int) -> Path:
        return self.directory / f"{self.owner}.{seq:08d}.jsonl"

    def append(self, record: dict[str, Any]) -> None:
        """One record as one JSON line in one `write` call: in the kernel when this returns."""
        if self._fd is None:
            self._fd = self._open_segment()
        line = orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)  # compact UTF-8, as json.dumps made it
        written = os.write(self._fd, line)
        while written < len(line):  # a regular file takes it whole in practice; be correct anyway
            written += os.write(self._fd, line[written:])
        if self.fsync:
            os.fsync(self._fd)
        self._current_bytes += len(line)
        self.appended += 1

    def seal(self) -> None:
        """Close the current segment (if it has anything); the next append opens a new one."""
        if self._fd is None:
            return
        os.close(self._fd)
        self._fd = None
        if self._current_bytes == 0:
            with contextlib.suppress(FileNotFoundError):
                self._segment(self._seq).unlink()
        self._current_bytes = 0
        self._seq += 1

    def sealed_segments(self) -> list[Path]:
        """This owner's closed segments, oldest first."""
        current = self._segment(self._seq) if self._fd is not None else None
        return sorted(p for p in self.directory.glob(f"{self.owner}.*.jsonl") if p != current and p.is_file())

    def claim_orphans(self) -> Iterator[OrphanClaim]:
        """The segments of each dead owner, one owner at a time, under that owner's lock."""
        for lock_path in sorted(self.directory.glob("*.lock")):
            if lock_path == self._lock_path:
                continue
            try:
                fd = os.open(lock_path, os.O_RDWR)
            except FileNotFoundError:
                continue  # claimed and finished by someone else meanwhile
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)  # its owner is alive
                continue
            owner = lock_path.name.removesuffix(".lock")
            segments = sorted(p for p in self.directory.glob(f"{owner}.*.jsonl") if p.is_file())
            yield OrphanClaim(lock_path, fd, segments)

    def pending_segments(self) -> list[Path]:
        """Every segment file in the directory (own and orphaned): what is not yet in the database."""
        return sorted(p for p in self.directory.glob("*.jsonl") if p.is_file())

    def close(self) -> None:
        """Seal, and let go of the lock; leftover segments stay for the next process to replay."""
        self.seal()
        if not self.sealed_segments():
            with contextlib.suppress(FileNotFoundError):
                self._lock_path.unlink()
        os.close(self._lock_fd)


def read_segment(path: Path) -> list[dict[str, Any]]:
    """The records of one segment. A torn last line (power cut mid-write) is skipped with a warning:
    its write never returned, so no caller was told that call was recorded."""
    records = []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                records.append(_record(line))
            except ValueError:
                log.warning("skipping unreadable line %d of audit spool %s", number, path.name)
    return records


def _record(line: bytes) -> Any:
    """One line decoded. orjson first: it wrote the line (`Spool.append`), and it reads it back at a
    fraction of stdlib `json`'s cost (every search's records pass here: issue 41). A line it refuses
    (NaN, an integer past 64 bits, a lone surrogate, a torn write, one written by another encoder)
    goes to stdlib `json`, whose answer or `ValueError` is then the one this function gives."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)

"""Build or update a project's local index from a folder (or one file): `zarniwoop index PATH`.

Incremental: a file whose size and mtime are unchanged is not read again; one whose bytes hash to
the stored SHA-256 is not parsed again (its new mtime is remembered); anything else is extracted,
chunked and stored in place of its old passages. Stored files under PATH that are gone are
removed — files indexed from other folders into the same project index are left alone.
Hidden files and folders (`.git`, `.venv`, …) and symbolic links are not followed.

    report = index_path(Path("~/notes").expanduser(), runtime.home, SearchScope("acme", "review"))
    report.to_json()   # {"indexed": 12, "updated": 1, "unchanged": 230, "removed": 2, ...}

Each file is its own transaction: an interrupted run keeps what it finished, and searches may run
meanwhile (WAL).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract.camel_json import camel_json
from ..contract.errors import ExtractionError, InvalidRequestError, MissingLibraryError
from .chunk import chunk_blocks
from .extract import extract, filetype_of
from .index import LocalIndex, StoredDocument, index_file

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Larger files are skipped: a 64 MB text file is a log or a dump, not a document to search."""
SUFFIXES_NAMED = ".txt .md .html .pdf"
"""Named in messages; `extract.FILETYPES` has the aliases (`.markdown`, `.htm`, …)."""
OPTIMIZE_AFTER = 200
"""Merge the FTS segments when at least this many files changed in a run."""

Progress = Callable[[int, int, str], None]
"""`(files done, files total, current path)`."""


@dataclass(frozen=True, slots=True)
class FileNote:
    path: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return camel_json(self)


@dataclass(slots=True)
class IndexReport:
    path: str
    index: str
    indexed: int = 0
    """New files."""
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[FileNote] = field(default_factory=list)
    """Files left out on purpose (too large, a library missing); their earlier passages are kept."""
    failed: list[FileNote] = field(default_factory=list)
    warnings: list[FileNote] = field(default_factory=list)
    passages_written: int = 0
    documents: int = 0
    """Files in the whole project index after the run (all folders)."""
    passages: int = 0
    elapsed_ms: int = 0
    rebuilt: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "index": self.index,
            "files": {
                "indexed": self.indexed,
                "updated": self.updated,
                "unchanged": self.unchanged,
                "removed": self.removed,
                "skipped": len(self.skipped),
                "failed": len(self.failed),
            },
            "skipped": [n.to_json() for n in self.skipped],
            "failed": [n.to_json() for n in self.failed],
            "warnings": [n.to_json() for n in self.warnings],
            "passagesWritten": self.passages_written,
            "documents": self.documents,
            "passages": self.passages,
            "elapsedMs": self.elapsed_ms,
            "rebuilt": self.rebuilt,
        }


def check_target(raw: str) -> Path:
    """The absolute path to index; `InvalidRequestError("PATH", …)` when it cannot be read."""
    path = Path(raw).expanduser()
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise InvalidRequestError("PATH", f"{raw}: no such file or folder") from None
    if resolved.is_dir():
        if not os.access(resolved, os.R_OK | os.X_OK):
            raise InvalidRequestError("PATH", f"{raw}: folder is not readable")
    elif resolved.is_file():
        if not os.access(resolved, os.R_OK):
            raise InvalidRequestError("PATH", f"{raw}: file is not readable")
        if filetype_of(resolved) is None:
            raise InvalidRequestError(
                "PATH", f"{raw}: not a text, Markdown, HTML or PDF file ({SUFFIXES_NAMED})"
            )
    else:
        raise InvalidRequestError("PATH", f"{raw}: not a regular file or folder")
    return resolved


def index_path(
    target: Path,
    home: Path,
    tenant: str,
    project: str,
    *,
    rebuild: bool = False,
    progress: Progress | None = None,
) -> IndexReport:
    """Index `target` (an absolute path from `check_target`) into the scope's index file."""
    started = time.monotonic()
    db_path = index_file(home, tenant, project)
    report = IndexReport(path=str(target), index=str(db_path), rebuilt=rebuild)
    candidates = _candidates(target, report)
    with LocalIndex.open_for_writing(db_path, fresh=rebuild) as index:
        if index.replaced:
            report.rebuilt = True
            report.warnings.append(
                FileNote(str(db_path), "an index of another format was replaced: index other folders again")
            )
        known = index.documents_under(target)
        changed = 0
        for done, path in enumerate(candidates):
            if progress is not None:
                progress(done, len(candidates), str(path))
            changed += _index_file(index, path, known.get(str(path)), report)
        seen = {str(p) for p in candidates}
        for gone in sorted(set(known) - seen):
            index.remove_document(gone)
            report.removed += 1
        if progress is not None:
            progress(len(candidates), len(candidates), "")
        index.record_root(str(target))
        if changed + report.removed >= OPTIMIZE_AFTER:
            index.optimize()
        stats = index.stats()
    report.documents, report.passages = stats.documents, stats.passages
    report.elapsed_ms = round((time.monotonic() - started) * 1000)
    return report


def _candidates(target: Path, report: IndexReport) -> list[Path]:
    """Supported files at or under `target`, sorted; unreadable folders are reported as failed."""
    if target.is_file():
        return [target]
    found: list[Path] = []

    def unreadable(error: OSError) -> None:
        report.failed.append(
            FileNote(str(error.filename or target), f"folder not readable: {error.strerror}")
        )

    for folder, dirs, files in os.walk(target, onerror=unreadable, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        base = Path(folder)
        for name in files:
            if name.startswith("."):
                continue
            path = base / name
            if filetype_of(path) is not None and not path.is_symlink():
                found.append(path)
    return sorted(found)


def _index_file(index: LocalIndex, path: Path, stored: StoredDocument | None, report: IndexReport) -> int:
    """Bring one file up to date; returns 1 when its passages were rewritten or removed."""
    key = str(path)
    try:
        stat = path.stat()
    except OSError as exc:
        report.failed.append(FileNote(key, f"cannot stat: {exc.strerror or exc}"))
        return 0
    if stored is not None and stored.size == stat.st_size and stored.mtime_ns == stat.st_mtime_ns:
        report.unchanged += 1
        return 0
    if stat.st_size > MAX_FILE_BYTES:
        report.skipped.append(FileNote(key, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"))
        return 0
    try:
        data = path.read_bytes()
    except OSError as exc:
        report.failed.append(FileNote(key, f"cannot read: {exc.strerror or exc}"))
        return 0
    digest = hashlib.sha256(data).hexdigest()
    if stored is not None and stored.sha256 == digest:
        index.touch_document(key, size=len(data), mtime_ns=stat.st_mtime_ns)
        report.unchanged += 1
        return 0
    filetype = filetype_of(path) or "txt"
    try:
        document = extract(path, data, filetype)
    except MissingLibraryError as exc:
        report.skipped.append(FileNote(key, exc.reason))
        return 0
    except ExtractionError as exc:
        if stored is not None:  # its old text is no longer what the file says
            index.remove_document(key)
            report.failed.append(FileNote(key, f"{exc.reason}; its earlier passages were removed"))
            return 1
        report.failed.append(FileNote(key, exc.reason))
        return 0
    report.warnings.extend(FileNote(key, w) for w in document.warnings)
    report.passages_written += index.replace_document(
        key,
        filetype=filetype,
        title=document.title,
        size=len(data),
        mtime_ns=stat.st_mtime_ns,
        sha256=digest,
        passages=chunk_blocks(document.blocks),
    )
    if stored is None:
        report.indexed += 1
    else:
        report.updated += 1
    return 1


__all__ = ["MAX_FILE_BYTES", "FileNote", "IndexReport", "check_target", "index_path"]

"""Checking files: which ones (never `bench/`: timing is what it measures), how they are named in a
finding, and which findings the allow-list lets through."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .allowlist import Allowed, read_allowlist
from .rules import Finding
from .walk import check_tree

REPO = Path(__file__).resolve().parents[2]
DEFAULT_ALLOWLIST = REPO / "tests" / "clock-allowlist.txt"


def python_files(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        files = [path] if path.is_file() else sorted(path.rglob("*.py"))
        for file in files:
            if "bench" not in file.parts and "__pycache__" not in file.parts:
                yield file


def display_path(path: Path) -> str:
    """Relative to the repository when inside it (as the allow-list names files), else as given."""
    resolved = path.resolve()
    return str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else str(path)


def check_file(path: Path, display: str | None = None) -> list[Finding]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return check_tree(display or display_path(path), tree)


@dataclass
class Report:
    findings: list[Finding]  # not allowed: each one fails the check
    allowed: list[Finding]
    problems: list[str]  # stale or malformed allow-list entries: these fail it too
    files: int

    @property
    def ok(self) -> bool:
        return not self.findings and not self.problems


def check(paths: Sequence[Path], allowlist: Path | None = DEFAULT_ALLOWLIST) -> Report:
    """Check the Python files under `paths` against the allow-list (None: no allow-list)."""
    entries, problems = read_allowlist(allowlist) if allowlist is not None else ([], [])
    findings: list[Finding] = []
    allowed: list[Finding] = []
    used: set[Allowed] = set()
    files = list(python_files(paths))
    for file in files:
        for finding in check_file(file):
            entry = next((e for e in entries if e.path == finding.path and e.scope == finding.scope), None)
            if entry is None:
                findings.append(finding)
            else:
                allowed.append(finding)
                used.add(entry)
    # an entry is stale only where its file was checked: a run over one file says nothing of the rest
    checked = {display_path(f) for f in files}
    for entry in entries:
        if entry not in used and entry.path in checked:
            problems.append(
                f"{allowlist}:{entry.line}: allow-list entry matches nothing: {entry.path}::{entry.scope}"
            )
    return Report(findings, allowed, problems, len(files))

"""The allow-list: a finding that is right as it is (a lower bound the checker cannot see as one, an
in-test bracket derived from a baseline measured in the same test) goes in it, one line each:

    tests/path/test_x.py::test_name  # why: ...

(`path::Class.method` for a method; `path::outer.inner` for a nested function; `path::<module>` for
module level). An entry covers every finding in that function; the `# why:` is required, and an
entry that no longer matches anything is reported too (report.py), so the list cannot outlive its
reasons."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Allowed:
    path: str
    scope: str
    line: int  # of the entry in the allow-list, to name a stale one


def read_allowlist(path: Path) -> tuple[list[Allowed], list[str]]:
    """The entries, and the problems with the file itself (an entry without its reason)."""
    entries: list[Allowed] = []
    problems: list[str] = []
    if not path.exists():
        return entries, problems
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        entry, _, comment = line.partition("#")
        target = entry.strip()
        reason = comment.strip()
        if "::" not in target or not reason.startswith("why:") or not reason[4:].strip():
            problems.append(f"{path}:{number}: allow-list entry must be `path::function  # why: ...`: {raw}")
            continue
        file, _, scope = target.partition("::")
        entries.append(Allowed(file, scope, number))
    return entries, problems

"""No decision by the clock in tests/ (issue 41): find the places where a test's outcome hangs on speed.

The command line of scripts/check_test_clock.py: prints `path:line: rule: what` per finding and
each allow-list problem, then exits 1; else one summary line, exit 0."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .report import DEFAULT_ALLOWLIST, REPO, check, display_path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[REPO / "tests"])
    parser.add_argument("--allowlist", type=Path, default=DEFAULT_ALLOWLIST)
    args = parser.parse_args(argv)
    report = check(args.paths, args.allowlist)
    for finding in report.findings:
        print(finding)
    for problem in report.problems:
        print(problem)
    if not report.ok:
        print(
            f"check_test_clock: {len(report.findings)} decision(s) by the clock, {len(report.problems)} "
            "allow-list problem(s): wait for the event, inject the clock (tests/support/clock.py), or "
            "derive the bound from a baseline measured in the same test",
            file=sys.stderr,
        )
        return 1
    print(
        f"check_test_clock: {report.files} files, 0 decisions by the clock, "
        f"{len(report.allowed)} allowed by {display_path(args.allowlist)}"
    )
    return 0

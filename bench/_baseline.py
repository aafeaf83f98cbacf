"""The committed baseline of `bench/instructions.py` and the gate that compares a run with it.

The file holds instructions per request of each phase, the workload that produced them (requests
per phase, clients) and the environment: an instruction count is a property of the code *and* of
the interpreter and libraries that run it (a new pydantic-core or aiohttp moves it as surely as a
change of ours), so the check names every difference beside its verdict. Raising a figure is a
commit that rewrites the file (`--write-baseline`) and says why in its message; lowering one is
the same without the need to explain.
"""

from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

TOLERANCE = 0.03
"""A phase fails above baseline × 1.03: twice the ~1 % a count moves between runs of the same code."""


def _distributions() -> dict[str, str]:
    """Versions of every distribution `zarniwoop` needs at run time (its requirements, transitively,
    extras left out): the libraries whose code a request runs."""
    versions: dict[str, str] = {}
    pending = ["zarniwoop"]
    while pending:
        name = pending.pop()
        try:
            requirements = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # a requirement for another platform or Python, not installed here
        for requirement in requirements:
            if "extra ==" in requirement:
                continue
            match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
            assert match is not None, requirement
            key = re.sub(r"[-_.]+", "-", match.group()).lower()
            if key in versions:
                continue
            try:
                versions[key] = metadata.version(key)
            except metadata.PackageNotFoundError:
                continue
            pending.append(key)
    return dict(sorted(versions.items()))


def environment() -> dict[str, Any]:
    """What the counts depend on besides the code: the interpreter, valgrind, the libraries."""
    valgrind = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "python": f"{platform.python_implementation()} {sys.version.split()[0]}",
        "machine": platform.machine(),
        "valgrind": valgrind,
        "packages": _distributions(),
    }


def load(path: Path) -> dict[str, Any]:
    try:
        baseline: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        raise SystemExit(f"no baseline at {path}: write one with --write-baseline {path}") from None
    return baseline


def same_workload(baseline: dict[str, Any], requests: dict[str, int], clients: int) -> None:
    """A figure per request still depends on how many requests share the fixed costs of a phase (and
    on the clients, which batch the event loop's wake-ups): compare like with like, or refuse."""
    wanted = {name: requests[name] for name in baseline["requestsPerPhase"]}
    if wanted != baseline["requestsPerPhase"] or clients != baseline["clients"]:
        raise SystemExit(
            f"the baseline was counted with {baseline['requestsPerPhase']} requests and "
            f"{baseline['clients']} clients; this run would use {wanted} and {clients}"
        )


def write(path: Path, report: dict[str, Any]) -> None:
    keys = ("instructionsPerRequest", "requestsPerPhase", "clients", "environment")
    path.write_text(json.dumps({key: report[key] for key in keys}, indent=2) + "\n")
    print(f"baseline written to {path}")


def differences(baseline: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Each way this run's environment differs from the baseline's, as `what: baseline → now`."""
    out = [
        f"{key}: {baseline[key]} → {current[key]}"
        for key in ("python", "machine", "valgrind")
        if baseline.get(key) != current[key]
    ]
    before, now = baseline.get("packages", {}), current["packages"]
    for name in sorted(before.keys() | now.keys()):
        if before.get(name) != now.get(name):
            out.append(f"{name}: {before.get(name, 'absent')} → {now.get(name, 'absent')}")
    return out


def over(baseline: dict[str, Any], figures: dict[str, int]) -> list[str]:
    """The phases over their baseline by more than `TOLERANCE`, or without one."""
    expected = baseline["instructionsPerRequest"]
    return [n for n, f in figures.items() if n not in expected or f > expected[n] * (1 + TOLERANCE)]


def check(baseline: dict[str, Any], report: dict[str, Any]) -> int:
    """Print each phase's figure, baseline and ratio; 1 when a phase exceeds its baseline by more
    than `TOLERANCE` (or has no baseline), else 0."""
    figures, expected = report["instructionsPerRequest"], baseline["instructionsPerRequest"]
    failed = over(baseline, figures)
    print(f"{'phase':<12} {'instructions':>13} {'baseline':>13} {'ratio':>7}")
    for name, figure in figures.items():
        if name not in expected:
            print(f"{name:<12} {figure:>13,} {'none':>13}  FAIL")
            continue
        verdict = "  FAIL" if name in failed else ""
        print(f"{name:<12} {figure:>13,} {expected[name]:>13,} {figure / expected[name]:>7.3f}{verdict}")
    changed = differences(baseline["environment"], report["environment"])
    if changed:
        print("this environment differs from the baseline's; the counts may move with it:")
        print("\n".join(f"  {line}" for line in changed))
    if not failed:
        print(f"every phase within {TOLERANCE:.0%} of its baseline")
        return 0
    print(
        f"over the baseline by more than {TOLERANCE:.0%}: {', '.join(failed)}"
        + (" (the environment differs: see above)" if changed else "")
    )
    return 1

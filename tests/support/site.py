"""What a module of console tests serves (`Site`), and the tokens its pages are opened with."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cli import run_cli
from .emulator import Emulator


@dataclass(frozen=True)
class Site:
    """A config, the home that holds the server's database, and — where a test reads what reached
    it — the emulator the providers point at."""

    config: Path
    home: Path
    emulator: Emulator = None  # type: ignore[assignment]


def make_token(site: Site, tenant: str, project: str, *options: str) -> dict[str, Any]:
    """`tokens create --tenant … --project … OPTIONS --json` on the site's database, in-process
    (support/cli.py); its JSON (`token`, `id`, …). The server may be running: it shares the database."""
    made = run_cli(
        *("--config", str(site.config), "tokens", "create", "--tenant", tenant, "--project", project),
        *options,
        "--json",
        home=site.home,
    )
    assert made.code == 0, made.stderr
    return dict(json.loads(made.stdout))

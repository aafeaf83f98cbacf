"""`zarniwoop search --next`: the last result's `nextPage` cursor, kept in the home per scope.

Only the cursor is written (`cli-next-page.json`, mode 0600): never the query, whose text the
cursor does not hold either (`dispatch/paging.py`). `--next` is given with the same query and
filters again; a cursor of another search is refused naming `page`.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from ...contract.query import SearchScope

NEXT_PAGE_FILE = "cli-next-page.json"


def _read(home: Path) -> dict[str, str]:
    try:
        data = json.loads((home / NEXT_PAGE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return (
        {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}
        if isinstance(data, dict)
        else {}
    )


def last_cursor(home: Path, scope: SearchScope) -> str | None:
    """The `nextPage` of the last search in `scope`, or None when it had none."""
    return _read(home).get(str(scope))


def remember_cursor(home: Path, scope: SearchScope, cursor: str | None) -> None:
    """Keep `cursor` (None: forget the scope's) for the next `--next`."""
    from ...storage.private import open_private

    cursors = _read(home)
    if cursor:
        cursors[str(scope)] = cursor
    else:
        cursors.pop(str(scope), None)
    path = home / NEXT_PAGE_FILE
    fd = open_private(path, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "w") as handle:
        json.dump(cursors, handle)

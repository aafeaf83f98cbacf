"""When an in-memory snapshot of a table must be reloaded: settings, credentials and org units are
read from memory on every request, and each replica notices another's write by a cheap fingerprint
query (row count, latest update) asked at most every `max_age` seconds."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..contract.clock import Clock
    from .db import Database, Row


class TableWatch:
    def __init__(self, db: Database, fingerprint_sql: str, clock: Clock) -> None:
        self.db = db
        self.fingerprint_sql = fingerprint_sql
        self.clock = clock
        self.loaded: Row | None = None
        """The fingerprint of the snapshot in memory (None: no snapshot, or one to be reloaded)."""
        self.checked_at = 0.0
        """Monotonic time of the last fingerprint query."""

    async def changed(self, max_age: float = 0.0) -> Row | None:
        """The table's fingerprint when the snapshot must be (re)loaded, else None. The caller
        stores it in `loaded` once the new snapshot is in, so a failed load is tried again."""
        now = self.clock.monotonic()
        if self.loaded is not None and now - self.checked_at < max_age:
            return None
        self.checked_at = now
        fingerprint = await self.db.fetchone(self.fingerprint_sql)
        return None if fingerprint == self.loaded else fingerprint

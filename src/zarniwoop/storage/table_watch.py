"""When an in-memory snapshot of a table must be reloaded: settings, credentials and org units are
read from memory on every request, and each replica notices another's write by a cheap fingerprint
query (row count, latest update) asked at most every `max_age` seconds."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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

    async def refresh(self, load: Callable[[], Awaitable[None]], max_age: float = 0.0) -> bool:
        """Run `load` (read the table into memory) when the table changed since the last load, or
        none was made; True when it ran. The fingerprint is kept only once `load` returned, so a
        failed load is tried again."""
        now = self.clock.monotonic()
        if self.loaded is not None and now - self.checked_at < max_age:
            return False
        self.checked_at = now
        fingerprint = await self.db.fetchone(self.fingerprint_sql)
        if fingerprint == self.loaded:
            return False
        await load()
        self.loaded = fingerprint
        return True

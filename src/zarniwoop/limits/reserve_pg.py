"""A reservation on PostgreSQL in one statement: `zw_reserve_hold` (migration 0041) takes the schema's
advisory lock, checks the token (when given) and every limited line's room, and writes the hold —
one network round trip where the transaction took five (BEGIN, lock, read, insert, COMMIT).

    await reserve_in_one_statement(db, hold, limited, keys, now, now + ttl, "tok_…")  # or raises
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from ..contract.errors import RevokedTokenError
from .budgets import Hold, LineStatus, QuotaLine, exhausted_error

if TYPE_CHECKING:
    from ..storage.db import Database
    from ..storage.postgres import PostgresDatabase

RESERVE_SQL = "SELECT zw_reserve_hold(?, ?, ?, ?, ?, ?, ?, ?)"


async def reserve_in_one_statement(
    db: Database,
    hold: Hold,
    limited: Sequence[QuotaLine],
    keys: Sequence[tuple[str, ...]],
    epoch: float,
    expires: float,
    token: str | None,
) -> None:
    """Hold `hold.amount` on each limited line (`keys`: each one's counter key), or raise as the
    transaction did: `QuotaExceededError` naming the first line without room, `RevokedTokenError`."""
    lock_key = cast("PostgresDatabase", db).lock_key
    flat = [part for key in keys for part in key]
    caps = [line.cap for line in limited]
    row = await db.fetchone(RESERVE_SQL, (lock_key, token, hold.id, hold.amount, epoch, expires, flat, caps))
    assert row is not None  # a function call always answers one row
    answer = [int(v) for v in row[0]]
    if answer[0] == -1:
        raise RevokedTokenError()
    if answer[0] > 0:
        place = answer[0] - 1
        status = LineStatus(limited[place], keys[place][6], answer[1], answer[2])
        raise exhausted_error(status, hold.amount)


__all__ = ["RESERVE_SQL", "reserve_in_one_statement"]

"""A gateway call's token check, carried by its budget reservation (issue 42: one storage round trip
before the first upstream byte).

A process remembers each token's principal (`tenancy/tokens.py` `TokenStore.recall`: a token's
binding never changes), so only "is it still unrevoked?" is left to ask per call. `reserve(token=…)`
asks it with the hold: the database forms inside the reservation's own statement or transaction
(`budgets_sql.py`; PostgreSQL's `zw_reserve_hold`, migration 0041); Redis, whose store has no
`tokens` table, beside its script, concurrently (`hold_beside_check`) — the hold is given back when
the token turns out revoked. Either way a revocation holds at once on every replica.

    check = TokenStore(db).live                                   # a TokenCheck
    await hold_beside_check(store._hold(hold, lines), check, "tok_…", store.release, hold)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..contract.errors import RevokedTokenError

if TYPE_CHECKING:
    from .budgets import Hold

TokenCheck = Callable[[str], Awaitable[bool]]
"""True while the token with this id exists and is unrevoked (`TokenStore.live`)."""


async def confirm_live(check: TokenCheck | None, token: str) -> None:
    """`RevokedTokenError` unless `check` says the token is live; a store given no check refuses
    (fail closed: a remembered token is never taken unchecked)."""
    if check is None or not await check(token):
        raise RevokedTokenError()


async def hold_beside_check(
    taking: Awaitable[None],
    check: TokenCheck | None,
    token: str,
    release: Callable[[Hold], Awaitable[None]],
    hold: Hold,
) -> None:
    """Take the hold (`taking`) and check the token concurrently: a revoked token gives a taken hold
    back (`release`) and raises `RevokedTokenError` (before whatever the hold raised); otherwise the
    hold's outcome."""
    held, live = await asyncio.gather(taking, confirm_live(check, token), return_exceptions=True)
    if isinstance(live, BaseException):
        if held is None:
            await release(hold)
        raise live
    if isinstance(held, BaseException):
        raise held


__all__ = ["TokenCheck", "confirm_live", "hold_beside_check"]

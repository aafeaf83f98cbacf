"""The one clock, injectable: cooldowns and TTLs shared across processes read wall time (`now`),
waits and per-process TTLs read `monotonic`, and every wait sleeps through `sleep` — so a test's
clock (tests/support/clock.py) decides all three.

It lives at the bottom (contract) so that every floor takes the same one: config's and tenancy's
snapshot TTLs as much as limits' pacing and the dispatcher's cooldowns; `limits.clock` re-exports
it for the floors above.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from datetime import UTC, date, datetime
from typing import overload


class Clock:
    # The system's clocks themselves, not methods calling them: a search reads them ~15 times, and a
    # Python-level method around each C call doubled the cost of a read (issue 41). Test clocks
    # override them with methods.
    now = staticmethod(time.time)
    """Seconds since the epoch (shared meaning across processes)."""
    monotonic = staticmethod(time.monotonic)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def utc_date(epoch: float) -> date:
    """The calendar date (UTC) of an epoch: "today" for protocols, from the dispatcher's clock."""
    return datetime.fromtimestamp(epoch, UTC).date()


@overload
def iso_utc(epoch: float) -> str: ...
@overload
def iso_utc(epoch: None) -> None: ...
@overload
def iso_utc(epoch: float | None) -> str | None: ...


def iso_utc(epoch: float | None) -> str | None:
    """`2025-04-01T12:00:00Z` for an epoch; None stays None."""
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def http_date(text: str) -> datetime | None:
    """An HTTP-date (`Date`, `Retry-After`; RFC 9110 §5.6.7) as an aware datetime, a zone-less one
    read as UTC; None when it does not parse."""
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)

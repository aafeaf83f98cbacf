"""Time, injectable: cooldowns are wall-clock (they are shared across processes), waits are monotonic."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime


class Clock:
    def now(self) -> float:
        """Seconds since the epoch (shared meaning across processes)."""
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def iso_utc(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")

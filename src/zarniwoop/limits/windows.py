"""Per-level rate limits: `requests_per_minute` and `tokens_per_minute` beside the token budgets.

    llm:
      quota: {daily_tokens: 500000, requests_per_minute: 10, tokens_per_minute: 40000}

Any level (account, project, team, tenant) may set either; every limit of every level holds. Each
upstream attempt is admitted against a sliding window (`ai.rateLimit.windowSeconds`, default 60 —
shorter only for tests): a request line counts attempts, a token line the call's reservation
(input estimate + `max_tokens`), corrected to the real usage when the call settles. A call over a
limit is refused before anything is sent, with `RateLimitExceededError(level, retry_after)`: the
seconds until the window has room (a gateway answers 429 with `Retry-After`). The local free
tier (`quota: unlimited` entries) is never rate-limited.

Three forms of one `AdmissionWindows`: `windows_sql.SQLAdmissionWindows` (the embedded default:
the `rate_windows` table, so separate CLI processes and `serve --workers` share one window on one
SQLite file or PostgreSQL), `windows_redis.RedisAdmissionWindows` (with `redis_url`: one Lua script
on Redis's own clock, every replica shares one window) and `LocalAdmissionWindows` (this process
only; the shared forms' outage fallback).

Outage policy (docs/robustness.md): admission windows fail open to the local window — when the
shared store is unreachable each process admits against its own window (logged once), like
pacing: a window guards a provider's rate, not money (the token budgets guard that, and fail
closed).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from ..contract.errors import RateLimitExceededError
from ..observability.outage import OutageLog
from .clock import Clock

if TYPE_CHECKING:
    from ..tenancy.accounts import CallScope

WINDOW_KEY = "ai.rateLimit.windowSeconds"
DEFAULT_WINDOW_SECONDS = 60.0
Kind = Literal["requests", "tokens"]


@dataclass(frozen=True, slots=True)
class RateLine:
    level: str
    owner: str
    kind: Kind
    limit: int

    @property
    def label(self) -> str:
        return f"{self.level}/{self.owner}"


@dataclass(frozen=True, slots=True)
class RateTicket:
    """One admitted attempt: what it counts on which lines (to correct or take back later)."""

    id: str
    tenant: str
    lines: tuple[RateLine, ...]
    tokens: int
    local: bool = False
    """Admitted by the local window (a shared store's outage fallback): settled there too."""


def rate_lines(scope: CallScope) -> list[RateLine]:
    """The request and token lines of every level that sets a per-minute limit."""
    lines: list[RateLine] = []
    for level, owner, unit in scope.levels():
        quota = unit.llm.quota if unit is not None else None
        if quota is None:
            continue
        if quota.requests_per_minute is not None:
            lines.append(RateLine(level, owner, "requests", quota.requests_per_minute))
        if quota.tokens_per_minute is not None:
            lines.append(RateLine(level, owner, "tokens", quota.tokens_per_minute))
    return lines


def refused(line: RateLine, retry_after: float, window: float) -> RateLimitExceededError:
    what = "requests" if line.kind == "requests" else "tokens"
    per = "minute" if window == DEFAULT_WINDOW_SECONDS else f"{window:g} s"
    return RateLimitExceededError(
        line.level,
        round(max(retry_after, 0.001), 3),
        f"{line.level.capitalize()} rate limit reached: {line.label} allows {line.limit:,} {what} per {per}; "
        f"retry in {max(retry_after, 0.001):.1f}s",
    )


def need_of(line: RateLine, tokens: int) -> int:
    """What one attempt counts on a line: 1 on a request line, its tokens on a token line."""
    return 1 if line.kind == "requests" else tokens


def no_room(
    line: RateLine, tokens: int, entries: Sequence[tuple[float, int]], now: float, window: float
) -> RateLimitExceededError | None:
    """The refusal when the line's window (its `(admitted at, amount)` entries) has no room for the
    attempt, else None."""
    need = need_of(line, tokens)
    if sum(amount for _, amount in entries) + need <= line.limit:
        return None
    return refused(line, wait_for_room(entries, need, line.limit, now, window), window)


class AdmissionWindows(Protocol):
    async def admit(
        self, tenant: str, lines: Sequence[RateLine], tokens: int, *, window: float
    ) -> RateTicket: ...

    async def settle(self, ticket: RateTicket, tokens: int) -> None: ...

    async def release(self, ticket: RateTicket) -> None: ...


def wait_for_room(
    entries: Sequence[tuple[float, int]], need: int, limit: int, now: float, window: float
) -> float:
    """Seconds until the oldest entries have left the window far enough that `need` more fit."""
    total = sum(amount for _, amount in entries)
    for at, amount in sorted(entries):
        total -= amount
        if total + need <= limit:
            return at + window - now
    return window  # more than the whole limit at once: one full window (it cannot fit sooner)


class LocalAdmissionWindows:
    """The windows of this process (monotonic clock); the shared forms' outage fallback."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        self._log: dict[tuple[str, str, str, str], dict[str, tuple[float, int]]] = {}
        self._lock = asyncio.Lock()

    def _entries(
        self, tenant: str, line: RateLine, now: float, window: float
    ) -> dict[str, tuple[float, int]]:
        entries = self._log.setdefault((tenant, line.level, line.owner, line.kind), {})
        for key in [k for k, (at, _) in entries.items() if at <= now - window]:
            del entries[key]
        return entries

    async def admit(
        self, tenant: str, lines: Sequence[RateLine], tokens: int, *, window: float
    ) -> RateTicket:
        ticket = RateTicket(secrets.token_hex(8), tenant, tuple(lines), tokens, local=True)
        async with self._lock:
            now = self.clock.monotonic()
            for line in lines:
                entries = list(self._entries(tenant, line, now, window).values())
                if (refusal := no_room(line, tokens, entries, now, window)) is not None:
                    raise refusal
            for line in lines:
                self._entries(tenant, line, now, window)[ticket.id] = (now, need_of(line, tokens))
        return ticket

    async def settle(self, ticket: RateTicket, tokens: int) -> None:
        async with self._lock:
            for line in ticket.lines:
                entries = self._log.get((ticket.tenant, line.level, line.owner, line.kind), {})
                if line.kind == "tokens" and ticket.id in entries:
                    entries[ticket.id] = (entries[ticket.id][0], max(0, tokens))

    async def release(self, ticket: RateTicket) -> None:
        async with self._lock:
            for line in ticket.lines:
                self._log.get((ticket.tenant, line.level, line.owner, line.kind), {}).pop(ticket.id, None)


class SharedAdmissionWindows:
    """What the shared forms (SQL, Redis) have in common: the outage policy. While the store fails
    with one of `store_errors`, each process admits against its own window (fail open, logged
    once), and a ticket admitted there is settled there; each form writes its three primitives."""

    store_errors: tuple[type[BaseException], ...]
    fallback: LocalAdmissionWindows
    outage: OutageLog

    async def admit(
        self, tenant: str, lines: Sequence[RateLine], tokens: int, *, window: float
    ) -> RateTicket:
        ticket = RateTicket(secrets.token_hex(8), tenant, tuple(lines), tokens)
        if not lines:
            return ticket
        try:
            refusal = await self._admit(ticket, window)
        except self.store_errors as exc:
            self.outage.failed(exc, "rate windows fail open: each process admits against its own window")
            return await self.fallback.admit(tenant, lines, tokens, window=window)
        self.outage.recovered()
        if refusal is not None:
            raise refusal
        return ticket

    async def settle(self, ticket: RateTicket, tokens: int) -> None:
        if ticket.local:
            return await self.fallback.settle(ticket, tokens)
        token_lines = [line for line in ticket.lines if line.kind == "tokens"]
        if not token_lines:
            return
        try:
            await self._settle(ticket, token_lines, max(0, tokens))
        except self.store_errors as exc:
            self.outage.failed(exc, "the attempt keeps its reserved tokens until the window slides on")

    async def release(self, ticket: RateTicket) -> None:
        if ticket.local:
            return await self.fallback.release(ticket)
        if not ticket.lines:
            return
        try:
            await self._release(ticket)
        except self.store_errors as exc:
            self.outage.failed(exc, "the attempt stays counted until the window slides on")

    async def _admit(self, ticket: RateTicket, window: float) -> RateLimitExceededError | None:
        """Record the attempt on every line, or on none and return the first line's refusal."""
        raise NotImplementedError

    async def _settle(self, ticket: RateTicket, token_lines: Sequence[RateLine], tokens: int) -> None:
        """Set the attempt's amount on its token lines to the tokens it used."""
        raise NotImplementedError

    async def _release(self, ticket: RateTicket) -> None:
        """Take the attempt off every line."""
        raise NotImplementedError


__all__ = [
    "DEFAULT_WINDOW_SECONDS",
    "WINDOW_KEY",
    "AdmissionWindows",
    "LocalAdmissionWindows",
    "RateLine",
    "RateTicket",
    "SharedAdmissionWindows",
    "need_of",
    "no_room",
    "rate_lines",
    "refused",
    "wait_for_room",
]

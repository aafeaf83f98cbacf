"""Every upstream token is charged: each attempt's hold, the settle with real usage, and the charge
of a call whose caller went away (issue 25 item 1).

An attempt holds its estimate at every budget level at once and is admitted into every per-minute
window (`reserve`); a failed attempt gives the hold back (`release`); a finished call is settled
with its real usage, together with its usage record (`charge`), through the ledger's group commit
(`ledger/charges.py`): the charges of the calls finishing at the same moment in one write batch of
the storage (`Database.write_batch`: one commit on SQLite, each write on its own on PostgreSQL),
committed before any of those calls returns.

A call whose caller goes away — a client closing a stream before `[DONE]`, or the socket of a
non-streamed call — has still made the upstream work. The call is then *abandoned*, not dropped:

- it runs on, detached from the caller, for at most `ai.call.drainMs` (default 30 s) to read the
  upstream to its usage (a stream's last chunk, a completion's `usage`), and is settled with
  exactly those counts;
- past that it is cut, and charged what is known to have been produced: the prompt (the request's
  estimate) plus the tokens already streamed, counted with the wire's estimate (`usage_check.estimate_tokens`,
  ≈ 4 characters a token) — for a non-streamed call, whose output is unknown until it ends, the
  whole reservation (prompt plus `max_tokens`);
- a stream cut by a deadline (the idle timeout between chunks) or failing upstream after tokens
  arrived is charged the same way.

Each is a usage row with outcome `cancelled` (an upstream failure after tokens: `error`, with its
tokens), settled at every budget level and in every per-minute window like any call. Since every
call reserves its estimate before it starts and only holds are admitted, a budget is passed by at
most what one call produced beyond its reservation.

    watch = CallWatch()
    task = asyncio.ensure_future(manager.chat(call, request, watch=watch))
    ...                      # the client went away:
    watch.abandon()          # the call is settled on its own, within the drain time
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..ledger import UsageRecord
    from ..limits.token_budgets import Hold, LineStatus
    from ..limits.windows import RateTicket
    from .call import CallParts, FirstHold, PreparedCall
    from .failover import Candidate

log = logging.getLogger("zarniwoop.llm")

DRAIN_KEY = "ai.call.drainMs"
"""How long an abandoned call may run on to learn its real usage before it is cut."""
DEFAULT_DRAIN_MS = 30_000
CANCELLED = "cancelled"


class CallWatch:
    """The caller's side of a call in flight: `abandon()` says the answer is no longer wanted.

    Synchronous on purpose: it is called from `finally` blocks of cancelled tasks, where an
    `await` would be cancelled again. The task doing the call is bound with `bind`; once abandoned
    it is cancelled after the drain time unless `settling()` said its usage is known.
    """

    __slots__ = ("_drain", "_task", "_timer", "abandoned", "cut")

    def __init__(self) -> None:
        self.abandoned = False
        self.cut = False
        """True once the drain time ran out and the call was cancelled by this watch."""
        self._task: asyncio.Task[Any] | None = None
        self._drain = DEFAULT_DRAIN_MS / 1000
        self._timer: asyncio.TimerHandle | None = None

    def bind(self, task: asyncio.Task[Any] | None, drain_seconds: float) -> None:
        self._task, self._drain = task, drain_seconds
        if self.abandoned and self._timer is None:
            self._arm()

    def abandon(self) -> None:
        if self.abandoned:
            return
        self.abandoned = True
        if self._task is not None:
            self._arm()

    def settling(self) -> None:
        """The usage is known: no cut from here on."""
        if self._timer is not None:
            self._timer.cancel()
        self._task = None

    def _arm(self) -> None:
        task = self._task
        if task is None or task.done():
            return

        def cut() -> None:
            if self._task is task and not task.done():
                self.cut = True
                task.cancel()

        self._timer = asyncio.get_running_loop().call_later(max(0.0, self._drain), cut)


# -- the charge ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Admission:
    """What one attempt holds: the budget reservation and the rate-window ticket."""

    hold: Hold
    ticket: RateTicket | None


async def release_first_hold(parts: CallParts, first: FirstHold | None) -> None:
    """Give back the first attempt's hold if no attempt took it (a local first candidate, a failure
    or cancellation before the first attempt)."""
    hold = first.take() if first is not None else None
    if hold is not None:
        await parts.ledger.release(hold)


async def reserve(parts: CallParts, prep: PreparedCall, candidate: Candidate) -> Admission | None:
    """Hold the estimate at every level at once and admit the attempt into every per-minute window
    (the local free tier holds nothing and is never rate-limited). The first attempt's hold may be
    reserved already (`FirstHold`)."""
    if candidate.unlimited:
        return None
    hold = prep.first_hold.take() if prep.first_hold is not None else None
    if hold is None:
        hold = await parts.ledger.reserve(prep.call.tenant, prep.lines, prep.estimate)
    ticket = None
    if prep.rate_lines:
        try:
            ticket = await parts.rate.admit(
                prep.call.tenant, prep.rate_lines, prep.estimate, window=prep.rate_window
            )
        except BaseException:
            await parts.ledger.release(hold)
            raise
    return Admission(hold, ticket)


async def release(parts: CallParts, admission: Admission | None) -> None:
    """A failed attempt gives its budget hold back; its request still counts in the per-minute
    windows (it may well have reached the provider), its tokens do not."""
    if admission is None:
        return
    await parts.ledger.release(admission.hold)
    if admission.ticket is not None:
        await parts.rate.settle(admission.ticket, 0)


async def charge(
    parts: CallParts, admission: Admission | None, tokens: int, record: UsageRecord
) -> list[LineStatus]:
    """Settle the budgets and write the call's usage record, through the ledger's group commit
    (`ledger/charges.py`): written before the call returns, with whatever other calls' charges are
    queued at the same moment; never raises. The rate-window ticket is settled first, on its own."""
    if admission is not None and admission.ticket is not None:
        try:
            await parts.rate.settle(admission.ticket, tokens)
        except Exception:
            log.exception("settling the rate windows of LLM call %s failed", record.id)
    return await parts.usage.charges.charge(
        parts.ledger, admission.hold if admission else None, tokens, record
    )


__all__ = [
    "CANCELLED",
    "DEFAULT_DRAIN_MS",
    "DRAIN_KEY",
    "Admission",
    "CallWatch",
    "charge",
    "release",
    "release_first_hold",
    "reserve",
]

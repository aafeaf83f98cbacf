"""An attempt's share of the search's time, and its pacing slot within that share (docs/robustness.md).

While another callable candidate waits, one attempt (pacing wait + call) gets `ATTEMPT_SHARE` of
the time left, so a hanging default never eats its fallback's time; the last candidate gets all of
it, minus `DEADLINE_MARGIN`. Within its share, the wait for the endpoint's pacing slot may take
`PACING_SHARE`: a slot that would come later is not waited for — the candidate is passed over at
once (`skipped_paced`) and the next one tried.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..contract.enums import Outcome
from ..limits.pacing import pace_key, wait_for_slot
from .gate import GateDecision

if TYPE_CHECKING:
    from ..contract.protocol import ProviderInstance
    from .search_run import Candidate, SearchRun

ATTEMPT_SHARE = 0.5
"""While another callable candidate waits, one attempt may take at most this share of the time left
(each later one again half of what is left then). A cap rather than hedging: it costs no second
upstream call while the default is healthy, and needs no setting to be safe."""
PACING_SHARE = 0.5
"""A pacing wait may take at most this share of its attempt's time; the call keeps the rest."""
DEADLINE_MARGIN = 0.05
"""The last attempt's own timeout fires this long before the search's deadline, so the cut call is
benched and recorded by the attempt itself rather than cancelled from outside."""


def share_of_time(run: SearchRun, queue: list[Candidate]) -> float:
    """Seconds this attempt (pacing wait + call) may take: while another callable candidate waits,
    `ATTEMPT_SHARE` of the time left, so a hanging default never eats its fallback's time; the
    last candidate gets all of it (minus `DEADLINE_MARGIN`, so its own timeout — which benches it
    — fires before the search's deadline does)."""
    remaining = run.deadline - run.dispatcher.clock.monotonic() - DEADLINE_MARGIN
    if any(c.decision.allowed for c in queue):
        return remaining * ATTEMPT_SHARE
    return remaining


async def wait_for_pace(run: SearchRun, instance: ProviderInstance, share: float) -> bool:
    """Wait for the endpoint's pacing slot (per credential) if it comes within `PACING_SHARE` of
    `share`: True once it has. False — recorded as `skipped_paced` — when it would come later."""
    config = instance.config
    key = pace_key(
        instance.protocol.id, config.instance_id, config.api_key.reveal() if config.api_key else None
    )
    delay = await run.dispatcher.limiter.reserve(
        key, config.rate_per_second, max_wait=share * PACING_SHARE, burst=config.rate_burst
    )
    if delay is None:
        reason = (
            f"rate limit {config.rate_per_second:g}/s: no start slot within "
            f"{share * PACING_SHARE * 1000:.0f} ms"
        )
        run.skip(instance, GateDecision(Outcome.SKIPPED_PACED, reason))
        return False
    try:
        await wait_for_slot(delay, run.dispatcher.clock)
    except asyncio.CancelledError:  # cut while waiting: the call never went out
        run.skip(instance, GateDecision(Outcome.SKIPPED_PACED, "deadline reached while paced"))
        raise
    return True

"""The hedged race: a slow candidate's call raced by the next callable one (DESIGN §5).

With hedging on, a candidate that has not answered after its hedge delay is raced by the next
callable candidate; the first success wins and the calls still running are cancelled, each
recording its own attempt (`dispatch/provider_call.py`). The delay is `research.hedge.afterMs`, or
— unset — the candidate's observed p95, and 0 for a candidate with a call hanging in this process
(`dispatch/hedging.py`). Without any delay to race on, the walk awaits each call in turn instead
(`dispatch/cascade.py`: no task, so the common path stays cheap).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .provider_call import call_candidate

if TYPE_CHECKING:
    from ..contract.protocol import ProviderInstance
    from ..contract.results import SearchResult
    from .search_run import Candidate, SearchRun


def hedge_delay(run: SearchRun, instance: ProviderInstance, hedge_after: int | None) -> float | None:
    """Seconds after which a call to `instance` is raced by the next candidate; None: never.
    `hedge_after`: the setting in ms (None = after the instance's observed p95)."""
    hedges = run.dispatcher.hedges
    if hedge_after != 0 and hedges.suspect(run.scope, instance.id):
        return 0.0  # a call to it is hanging: race it at once
    return hedges.hedge_after(instance.id, hedge_after)


def races(run: SearchRun, queue: list[Candidate], hedge_after: int | None) -> bool:
    """Whether the walk must race: at least two callable candidates, and one before the last that
    has a hedge delay."""
    callable_ = [c for c in queue if c.decision.allowed]
    if len(callable_) < 2:
        return False
    return any(hedge_delay(run, c.instance, hedge_after) is not None for c in callable_[:-1])


async def hedged_race(run: SearchRun, queue: list[Candidate], hedge_after: int | None) -> SearchResult | None:
    """Walk the candidates in order, recording skips as they come; a call that has not answered
    after its hedge delay is raced by the next callable candidate, and the losers are cancelled."""
    running: dict[asyncio.Task[SearchResult | None], ProviderInstance] = {}  # in order of calling
    latest: list[ProviderInstance] = []

    def start_next() -> bool:
        candidate = run.next_callable(queue)
        if candidate is None:
            return False
        running[asyncio.create_task(call_candidate(run, candidate, queue))] = candidate.instance
        latest[:] = [candidate.instance]
        return True

    try:
        while queue or running:
            if not running and not start_next():
                continue
            can_hedge = any(c.decision.allowed and c.instance.config.hedge for c in queue)
            delay = hedge_delay(run, latest[0], hedge_after) if can_hedge and latest else None
            done, _ = await asyncio.wait(running, timeout=delay, return_when=asyncio.FIRST_COMPLETED)
            if not done:  # the hedge timer fired: race the next candidate
                start_next()
                continue
            for task in done:
                called_before = list(running).index(task)
                running.pop(task)
                result = task.result()
                if result is None:
                    continue
                for position, (loser_task, loser) in enumerate(running.items()):
                    run.cut_reasons[loser.id] = (
                        f"cancelled: hedged, {result.provider_instance_id} answered first"
                    )
                    if position < called_before:
                        run.overtaken.add(loser.id)
                    loser_task.cancel()
                return result
        return None
    finally:
        for task in running:
            task.cancel()
        if running:  # each cut call records its own attempt (see `provider_call.call_candidate`)
            await asyncio.gather(*running, return_exceptions=True)

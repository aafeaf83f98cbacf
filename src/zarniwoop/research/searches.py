"""The investigation's searches step: a plan's searches run concurrently through the caller's
bound search (its scope, cache and profile), each logged for the `searches` of the answer and told
to the progress tracker, then their hits merged (`research/dedup.py`).

With a `Checkpoint` (a task's, issue 45) each search is asked of it first and kept in it once
answered (`checkpoints.py`): a run resumed on another process recalls the searches already paid for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..contract.query import SearchRequest
from .checkpoints import recalled_search
from .dedup import merge
from .spans import step

if TYPE_CHECKING:
    from ..contract.checkpoint import Checkpoint
    from ..contract.results import SearchHit, SearchResult
    from ..dispatch.dispatcher import BoundSearch
    from .model import MergedHit, Plan
    from .progress import Tracker


async def search_and_merge(
    plan: Plan,
    search: BoundSearch,
    max_results: int,
    log_into: list[dict[str, Any]],
    tracker: Tracker,
    checkpoint: Checkpoint | None = None,
) -> list[MergedHit]:
    """Run the plan's searches concurrently (each a progress step and an entry in `log_into`), then
    merge their hits (`dedup.merge`) — a progress step of its own."""
    batches = await _run(plan, search, max_results, log_into, tracker, checkpoint)
    with step("dedup"):
        merged = merge(batches)
    found = sum(len(hits) for *_, hits in batches)
    await tracker.step("dedup", f"merged {found} hits into {len(merged)}", hits=found, merged=len(merged))
    return merged


async def _run(
    plan: Plan,
    search: BoundSearch,
    max_results: int,
    log_into: list[dict[str, Any]],
    tracker: Tracker,
    checkpoint: Checkpoint | None,
) -> list[tuple[str, str, float, Sequence[SearchHit]]]:
    requests = [SearchRequest.create(s.query, s.modality, max_results=max_results) for s in plan.searches]
    finished = [0]

    async def one(request: SearchRequest) -> SearchResult:
        result = await recalled_search(request, search, checkpoint)
        finished[0] += 1
        served = result.provider_instance_id or "no provider"
        await tracker.step(
            "search",
            f"search {finished[0]}/{len(requests)}: {request.modality.value} via {served}, "
            f"{result.returned_count} hits",
            query=request.query,
            modality=request.modality.value,
            providerInstanceId=result.provider_instance_id,
            hits=result.returned_count,
        )
        return result

    results: list[SearchResult] = await asyncio.gather(*(one(r) for r in requests))
    batches: list[tuple[str, str, float, Sequence[SearchHit]]] = []
    for planned, result in zip(plan.searches, results, strict=True):
        log_into.append(
            {
                "query": planned.query,
                "modality": planned.modality.value,
                "providerInstanceId": result.provider_instance_id,
                "hits": result.returned_count,
                "errorMessage": result.error_message,
                **({"errorSummary": result.error_summary} if result.error_summary else {}),
                "cached": result.cached,
                **({"attempts": [a.to_json() for a in result.attempts]} if result.error_message else {}),
            }
        )
        if result.provider_instance_id and result.hits:
            affinity = float(planned.source_affinity.get(result.provider_instance_id, 1.0))
            batches.append((planned.query, result.provider_instance_id, affinity, result.hits))
    return batches

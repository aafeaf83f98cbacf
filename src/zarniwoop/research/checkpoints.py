"""A run's finished steps, kept in its `Checkpoint` (a task's, issue 45) and recalled when the run is
resumed on another process: the plan (an LLM planner would plan anew, and other searches) and each
search (paid for upstream). Without a checkpoint each step simply runs.

Step keys are hashes, so no question or query is written in clear where the steps are kept.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..contract.results import SearchResult
from .model import Plan

if TYPE_CHECKING:
    from ..contract.checkpoint import Checkpoint
    from ..contract.query import SearchRequest
    from ..dispatch.dispatcher import BoundSearch


def _key(kind: str, *parts: object) -> str:
    return f"{kind}:" + hashlib.sha256("\n".join(map(str, parts)).encode()).hexdigest()[:40]


def search_key(request: SearchRequest) -> str:
    """A search's name among a run's finished steps: its modality, size and query, hashed."""
    return _key("search", request.modality.value, request.max_results, request.query)


async def recalled_search(
    request: SearchRequest, search: BoundSearch, checkpoint: Checkpoint | None
) -> SearchResult:
    """The search's kept answer, or its answer now (then kept)."""
    if checkpoint is None:
        return await search(request)
    key = search_key(request)
    kept = await checkpoint.recall(key)  # raises CancelledError when the run was cancelled meanwhile
    if kept is not None:
        return SearchResult.from_json(kept)
    result = await search(request)
    await checkpoint.keep(key, result.to_json())
    return result


async def recalled_plan(
    question: str, checkpoint: Checkpoint | None, plan: Callable[[], Awaitable[tuple[Plan, str]]]
) -> tuple[Plan, str]:
    """The run's kept plan and its strategy note, or `plan()`'s (then kept)."""
    if checkpoint is None:
        return await plan()
    key = _key("plan", question)
    kept = await checkpoint.recall(key)
    if kept is not None:
        return Plan.from_json(kept["plan"]), kept["strategy"]
    made, strategy = await plan()
    await checkpoint.keep(key, {"plan": made.to_json(), "strategy": strategy})
    return made, strategy

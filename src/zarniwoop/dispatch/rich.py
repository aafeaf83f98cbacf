"""The rich fan-out: one query over several modalities at once, under one deadline.

Each modality is its own dispatcher search (its own cascade, cooldowns and cache) running
concurrently with the others; the whole call ends by `research.deadlineMs`. A modality that fails,
raises, or is still running at the deadline comes back as a `SearchResult` carrying its
`errorMessage`, and never takes the other modalities down with it.

    results = await rich_search(runtime.dispatcher, scope, "aurora borealis", max_results=5)
    results[Modality.IMAGE].hits
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING

from ..config import keys as K
from ..contract.enums import Modality, Tier
from ..contract.errors import ZarniwoopError
from ..contract.query import SearchRequest
from ..contract.results import SearchResult
from .profiles import GLOBAL_ORDER, ProfileChoice

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from .dispatcher import BoundSearch, Dispatcher

log = logging.getLogger(__name__)
ModalityDone = Callable[[Modality, SearchResult], Awaitable[None]]
"""Told each modality's result as it arrives (the tools layer turns it into progress steps)."""
GRACE_SECONDS = 0.25
"""Each dispatcher search ends by the deadline itself; this is only the backstop beyond it."""


async def rich_search(
    dispatcher: Dispatcher,
    scope: SearchScope,
    query: str,
    *,
    max_results: int,
    modalities: Iterable[Modality],
    on_result: ModalityDone | None = None,
    cache: bool = True,
    profile: ProfileChoice = GLOBAL_ORDER,
) -> dict[Modality, SearchResult]:
    """Search every modality concurrently; results in the order the modalities were given.
    `cache` and `profile` apply to each modality's search (`Dispatcher.search`)."""
    wanted = list(dict.fromkeys(modalities))
    provider_set = await dispatcher.factory.providers(scope)
    deadline_s = provider_set.settings.get_int(K.DEADLINE_MS, 20000) / 1000
    search = partial(dispatcher.search, scope=scope, cache=cache, profile=profile)
    tasks = {
        modality: asyncio.create_task(
            _one(search, query, modality, max_results, on_result), name=f"rich:{modality}"
        )
        for modality in wanted
    }
    _, pending = await asyncio.wait(tasks.values(), timeout=deadline_s + GRACE_SECONDS)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    out: dict[Modality, SearchResult] = {}
    for modality, task in tasks.items():
        if task in pending:
            out[modality] = _failed(query, modality, f"deadline of {deadline_s * 1000:.0f} ms reached")
        else:
            out[modality] = task.result()
    return out


async def _one(
    search: BoundSearch,
    query: str,
    modality: Modality,
    max_results: int,
    on_result: ModalityDone | None,
) -> SearchResult:
    result = await _search(search, query, modality, max_results)
    if on_result is not None:
        await on_result(modality, result)
    return result


async def _search(search: BoundSearch, query: str, modality: Modality, max_results: int) -> SearchResult:
    try:
        request = SearchRequest.create(query, modality, max_results=max_results)
        return await search(request)
    except ZarniwoopError as exc:
        return _failed(query, modality, exc.message)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a bug in one modality's path must not cost the others their answers
        log.exception("rich search of %s failed", modality.value)
        return _failed(query, modality, f"internal error ({type(exc).__name__})")


def _failed(query: str, modality: Modality, message: str) -> SearchResult:
    return SearchResult(
        query=query, modality=modality, tier=Tier.NORMAL, provider_instance_id=None, error_message=message
    )


__all__ = ["rich_search"]

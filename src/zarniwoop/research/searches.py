"""The searching steps of an investigation (`research/pipeline.py`): run a plan's searches through
the dispatcher at once, each reported to the progress tracker and logged; merge their hits (dedup);
deepen the top hits whose text is only a snippet by loading the page behind them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..contract.enums import ContentInline
from ..contract.query import SearchRequest
from ..contract.results import ContentRef, SearchHit
from .dedup import merge
from .model import MergedHit, Plan
from .progress import Tracker

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..contract.results import SearchResult
    from ..dispatch.dispatcher import Dispatcher

DEEPEN_LIMIT = 8
"""How many top hits Deepen loads content for: bodies are large and the evaluation wants the best ones."""
SHORT_TEXT = 500
"""Inline text shorter than this is a snippet, not a body: Deepen loads the page behind it."""

ContentLoader = Callable[[SearchHit, "SearchScope"], Awaitable[str | None]]


@dataclass(frozen=True, slots=True)
class PlanSearches:
    """Searches a plan through `dispatcher`; Deepen loads pages with `content_loader` (None: skipped)."""

    dispatcher: Dispatcher
    content_loader: ContentLoader | None

    async def search_and_merge(
        self,
        plan: Plan,
        scope: SearchScope,
        max_results: int,
        log_into: list[dict[str, Any]],
        tracker: Tracker,
    ) -> list[MergedHit]:
        """Every planned search at once; each logged into `log_into`; their hits merged."""
        requests = [SearchRequest.create(s.query, s.modality, max_results=max_results) for s in plan.searches]
        results = await self._search(requests, scope, tracker)
        batches = _batches(plan, results, log_into)
        merged = merge(batches)
        found = sum(len(hits) for *_, hits in batches)
        await tracker.step("dedup", f"merged {found} hits into {len(merged)}", hits=found, merged=len(merged))
        return merged

    async def _search(
        self, requests: list[SearchRequest], scope: SearchScope, tracker: Tracker
    ) -> list[SearchResult]:
        finished = [0]

        async def one(request: SearchRequest) -> SearchResult:
            result = await self.dispatcher.search(request, scope)
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

        return list(await asyncio.gather(*(one(r) for r in requests)))

    async def deepen(self, merged: list[MergedHit], scope: SearchScope, notes: list[str]) -> list[MergedHit]:
        """Load bodies for the top hits that carry no text or only a snippet, so Evaluate sees more."""
        if self.content_loader is None:
            notes.append("deepen skipped: no content loader configured")
            return merged
        targets = [m for m in merged[:DEEPEN_LIMIT] if len(_inline_text(m.hit)) < SHORT_TEXT]
        loaded = await asyncio.gather(
            *(self.content_loader(m.hit, scope) for m in targets), return_exceptions=True
        )
        texts = {
            m.key: text for m, text in zip(targets, loaded, strict=True) if isinstance(text, str) and text
        }
        notes.append(f"deepened {len(texts)} of {len(targets)} hits")
        return [
            replace(m, hit=replace(m.hit, content=ContentRef(ContentInline.EMBED_TEXT, text=texts[m.key])))
            if m.key in texts
            else m
            for m in merged
        ]


def _batches(
    plan: Plan, results: Sequence[SearchResult], log_into: list[dict[str, Any]]
) -> list[tuple[str, str, float, Sequence[SearchHit]]]:
    """Each search's log entry, and the hits of those that found some with their source's affinity."""
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


def _inline_text(hit: SearchHit) -> str:
    return (hit.content.text or "") if hit.content is not None else ""


__all__ = ["DEEPEN_LIMIT", "SHORT_TEXT", "ContentLoader", "PlanSearches"]

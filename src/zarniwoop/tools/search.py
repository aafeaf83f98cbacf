"""`research_search` and `research_search_expert`: one modality through the dispatcher.

The structured answer is the `SearchResult` JSON of DESIGN §3 (hits, `providerInstanceId`,
`attempts`, …); the text is the numbered hit list, with the provenance footer when enabled.
A search in which every provider failed is still an answer (no hits, `errorMessage` naming
each provider's reason), flagged `is_error` so that a model does not mistake it for "nothing
exists".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..contract.errors import InvalidRequestError
from ..contract.query import SearchRequest
from ..contract.results import SearchResult
from .base import ToolContext, ToolResult, ToolSpec
from .inputs import ResearchSearchExpertInput, ResearchSearchInput
from .render import render_result


def search_request(args: ResearchSearchInput) -> SearchRequest:
    return SearchRequest.create(
        args.query,
        args.modality,
        max_results=args.max_results,
        locale=args.locale,
        profile=args.profile,
        filters=args.search_filters(),
    )


def expert_request(args: ResearchSearchExpertInput) -> SearchRequest:
    return SearchRequest.create(
        args.query,
        args.modality,
        tier="EXPERT",
        max_results=args.max_results,
        pinned_provider_id=args.pinned_provider_id,
        expert_params=args.expert_params(),
        profile=args.profile,
        filters=args.search_filters(),
    )


OVERRIDABLE_PREFIX = "research."
"""Per-call overrides reach the search layer's settings only (`research.default.web`,
`research.endpoint.brave.enabled`, `research.deadlineMs`, …)."""


def checked_overrides(raw: Mapping[str, object] | None) -> dict[str, str]:
    """Per-call overrides as setting strings; a key outside `research.*` or a non-scalar value is an
    `InvalidRequestError` naming it."""
    out: dict[str, str] = {}
    for key, value in (raw or {}).items():
        field = f"overrides.{key}"
        if not isinstance(key, str) or not key.startswith(OVERRIDABLE_PREFIX) or len(key) > 200:
            raise InvalidRequestError(
                field, f"only {OVERRIDABLE_PREFIX}* settings can be overridden per call"
            )
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            out[key] = str(value)
        else:
            raise InvalidRequestError(
                field, f"must be a string, number or boolean, got {type(value).__name__}"
            )
    return out


async def run_search(ctx: ToolContext, args: ResearchSearchInput) -> ToolResult:
    result = await ctx.host.dispatcher.search(
        search_request(args), ctx.scope, ctx.overrides or None, cache=ctx.cache, profile=ctx.profile
    )
    return search_result(SEARCH.name, result, ctx.provenance)


async def run_search_expert(ctx: ToolContext, args: ResearchSearchExpertInput) -> ToolResult:
    result = await ctx.host.dispatcher.search(
        expert_request(args), ctx.scope, ctx.overrides or None, cache=ctx.cache, profile=ctx.profile
    )
    return search_result(SEARCH_EXPERT.name, result, ctx.provenance)


def search_result(name: str, result: SearchResult, provenance: bool | Callable[[], bool]) -> ToolResult:
    """The tool's answer; its text (and `provenance`, read from the settings) only when it is read."""
    return ToolResult(
        name=name,
        structured=result.to_json(),
        text=lambda: render_result(result, provenance=provenance() if callable(provenance) else provenance),
        is_error=result.error_message is not None,
    )


SEARCH = ToolSpec(
    name="research_search",
    title="Search",
    description=(
        "Search the web, papers, encyclopedias, news, images, videos, books and more. Pick the kind of "
        "source with `modality`; Zarniwoop chooses the provider and falls back to others when one fails. "
        "Returns a numbered hit list (title, URL, snippet). Use this first for any question."
    ),
    input_model=ResearchSearchInput,
    body=run_search,
)

SEARCH_EXPERT = ToolSpec(
    name="research_search_expert",
    title="Expert search",
    description=(
        "Targeted search with filters: only some sites (`site`, `includeDomains`) or none of some "
        "(`excludeDomains`), one file type (`filetype`, e.g. pdf), a date range (`dateFrom`/`dateTo`) or a "
        "recent one (`timeRange`), safe search, a language and region, or exactly one provider instance "
        "(`pinnedProviderId`, see research_providers; no fallback then). Pass a result's `nextPage` as `page` "
        "for more results. Use after research_search to narrow down."
    ),
    input_model=ResearchSearchExpertInput,
    body=run_search_expert,
)

__all__ = [
    "SEARCH",
    "SEARCH_EXPERT",
    "checked_overrides",
    "expert_request",
    "search_request",
    "search_result",
]

"""`research_rich`: WEB, IMAGE, VIDEO and NEWS for one query, concurrently, grouped by modality.

Structured answer: `{"query", "maxResults", "results": {"WEB": SearchResult, "IMAGE": …}}`; a
modality that failed carries its `errorMessage` and the others are unaffected. The call is an
error only when no modality found anything and at least one failed. Each modality's answer is a
progress step (`modality`) as it arrives.
"""

from __future__ import annotations

from ..contract.enums import Modality
from ..contract.results import SearchResult
from ..dispatch.rich import rich_search
from ..research.progress import Tracker
from .base import ToolContext, ToolResult, ToolSpec
from .inputs import RICH_MODALITIES, ResearchRichInput
from .render import render_rich


async def run_rich(ctx: ToolContext, args: ResearchRichInput) -> ToolResult:
    tracker = Tracker(ctx.progress, total=len(RICH_MODALITIES))

    async def answered(modality: Modality, result: SearchResult) -> None:
        served = result.provider_instance_id or "no provider"
        await tracker.step(
            "modality",
            f"{modality.value}: {result.returned_count} hits via {served}",
            modality=modality.value,
            providerInstanceId=result.provider_instance_id,
            hits=result.returned_count,
        )

    results = await rich_search(
        ctx.host.dispatcher,
        ctx.scope,
        args.query,
        max_results=args.max_results,
        modalities=RICH_MODALITIES,
        on_result=answered,
        cache=ctx.cache,
        profile=ctx.profile,
    )
    structured = {
        "query": args.query,
        "maxResults": args.max_results,
        "results": {modality.value: result.to_json() for modality, result in results.items()},
    }
    nothing = all(not r.hits for r in results.values())
    return ToolResult(
        name=RICH.name,
        structured=structured,
        text=render_rich(results, provenance=ctx.provenance()),
        is_error=nothing and any(r.error_message for r in results.values()),
    )


RICH = ToolSpec(
    name="research_rich",
    title="Rich search",
    description=(
        "One query searched as WEB, IMAGE, VIDEO and NEWS at the same time; hits grouped by modality. "
        "Use it to see what exists on a topic across media in one step. A modality that fails says why "
        "and does not affect the others."
    ),
    input_model=ResearchRichInput,
    body=run_rich,
)

__all__ = ["RICH"]

"""`research_rich`: WEB, IMAGE, VIDEO and NEWS for one query, concurrently, grouped by modality.

Structured answer: `{"query", "maxResults", "results": {"WEB": SearchResult, "IMAGE": …}}`; a
modality that failed carries its `errorMessage` and the others are unaffected. The call is an
error only when no modality found anything and at least one failed.
"""

from __future__ import annotations

from ..dispatch.rich import rich_search
from .base import ToolContext, ToolResult, ToolSpec
from .inputs import RICH_MODALITIES, ResearchRichInput
from .render import render_rich


async def run_rich(ctx: ToolContext, args: ResearchRichInput) -> ToolResult:
    results = await rich_search(
        ctx.host.dispatcher,
        ctx.scope,
        args.query,
        max_results=args.max_results,
        modalities=RICH_MODALITIES,
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

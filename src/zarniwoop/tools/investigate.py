"""`research_investigate`: the curated pipeline (plan → searches → dedup → evaluate → rank, DESIGN §7).

The pipeline is `zarniwoop.research`; this tool is its face. Structured answer: the `RankedHitSet`
JSON (`question, plan, hits[{key, hit, score, relevanceScore, affinity, sources, reason}], dropped,
refineDepth, refinePlan, insights {claims, entities}, failures, rationale, strategies, searches,
usage`); text: the ranked hits, numbered, each with its score, the providers that found it and why
it was kept, the insights citing them by number, then what was dropped and which strategies ran.
"""

from __future__ import annotations

from .base import ToolContext, ToolResult, ToolSpec
from .inputs import ResearchInvestigateInput
from .render import render_investigation

DEFAULT_MAX_RESULTS = 10


async def run_investigate(ctx: ToolContext, args: ResearchInvestigateInput) -> ToolResult:
    ranked = await ctx.host.investigator.investigate(
        args.question,
        ctx.scope,
        max_results=args.max_results or DEFAULT_MAX_RESULTS,
        depth=args.depth or 0,
        insights=args.insights,
        progress=ctx.progress,
        cache=ctx.cache,
        profile=ctx.profile,
        checkpoint=ctx.checkpoint,
    )
    return ToolResult(
        name=INVESTIGATE.name,
        structured=ranked.to_json(),
        text=render_investigation(ranked),
        is_error=not ranked.hits
        and not ranked.dropped
        and any(s.get("errorMessage") for s in ranked.searches),
    )


INVESTIGATE = ToolSpec(
    name="research_investigate",
    title="Investigate",
    description=(
        "Deep research on a question: plans several searches across suitable sources, runs them, "
        "de-duplicates and evaluates the hits, and returns a ranked, filtered list with reasons. Slower "
        "than research_search; use it for questions where filtering many sources pays off."
    ),
    input_model=ResearchInvestigateInput,
    body=run_investigate,
)

__all__ = ["INVESTIGATE"]

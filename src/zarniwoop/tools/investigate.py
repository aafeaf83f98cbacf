"""`research_investigate`: the curated pipeline (plan → searches → evaluate → rank, DESIGN §7).

The pipeline is a service of its own. It plugs in as `runtime.extras["investigator"]`, an object
with `async investigate(scope, question, *, max_results, depth)` returning a result with
`to_json()` (the `RankedHitSet`) and, optionally, `render_text()`. Until one is attached, the tool
answers with `NotConfiguredError`, a clear message and a pointer to the tools that do work,
rather than a fake answer.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from ..contract.errors import NotConfiguredError
from ..contract.query import SearchScope
from .base import ToolContext, ToolResult, ToolSpec
from .inputs import ResearchInvestigateInput

EXTRAS_KEY = "investigator"
NOT_CONFIGURED = (
    "research_investigate is not configured in this installation: the curated research pipeline "
    "(plan → searches → evaluate → rank) is not installed. Use research_search or research_rich instead."
)


class Investigator(Protocol):
    async def investigate(
        self, scope: SearchScope, question: str, *, max_results: int | None, depth: int | None
    ) -> Any: ...


async def run_investigate(ctx: ToolContext, args: ResearchInvestigateInput) -> ToolResult:
    investigator: Investigator | None = ctx.runtime.extras.get(EXTRAS_KEY)
    if investigator is None:
        raise NotConfiguredError("research_investigate", NOT_CONFIGURED)
    outcome = await investigator.investigate(
        ctx.scope, args.question, max_results=args.max_results, depth=args.depth
    )
    structured = outcome.to_json()
    render = getattr(outcome, "render_text", None)
    text = render() if callable(render) else json.dumps(structured, ensure_ascii=False, indent=2)
    return ToolResult(name=INVESTIGATE.name, structured=structured, text=text)


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

__all__ = ["EXTRAS_KEY", "INVESTIGATE", "NOT_CONFIGURED", "Investigator"]

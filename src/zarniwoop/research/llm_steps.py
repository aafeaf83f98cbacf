"""Plan and Evaluate through LightLlm recipes (`zarniwoop-research-plan`, `zarniwoop-research-evaluate`).

The recipes are bundled YAML documents with Jinja2 prompts and a JSON schema, overridable per
scope. An answer that names a modality or source that does not exist is cleaned, not trusted: a
planned search for an unknown modality is dropped, an affinity for an unknown source ignored, and
a verdict for a hit that was not shown is discarded (the pipeline reports unjudged hits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..contract.enums import Modality
from ..contract.errors import ParseError
from .heuristics import HeuristicPlanner
from .model import MergedHit, Plan, PlannedSearch, Verdict

if TYPE_CHECKING:
    from ..llm.light import LightLlm

PLAN_RECIPE = "zarniwoop-research-plan"
EVALUATE_RECIPE = "zarniwoop-research-evaluate"
EVALUATE_TEXT_CHARS = 600
"""Per hit, enough of the snippet/body to judge relevance; the evaluation prompt stays small."""
EVALUATE_BATCH = 25


class LlmPlanner:
    def __init__(self, light: LightLlm, hints: Mapping[str, str]) -> None:
        self.light = light
        self.hints = hints
        self.strategy = f"llm:{PLAN_RECIPE}"
        self._refiner = HeuristicPlanner()

    async def plan(
        self, question: str, available: Mapping[Modality, Sequence[str]], max_searches: int = 4
    ) -> Plan:
        catalog = {
            modality.value: [{"id": i, "hint": " ".join(self.hints.get(i, "").split())} for i in ids]
            for modality, ids in available.items()
        }
        result = await self.light.call_for_json(
            PLAN_RECIPE, {"question": question, "catalog": catalog, "max_searches": max_searches}
        )
        searches = []
        for item in result.data["searches"]:
            try:
                modality = Modality(str(item["modality"]).strip().upper())
            except ValueError:
                continue
            if modality not in available:
                continue
            affinity = {
                source: float(weight)
                for source, weight in (item.get("sourceAffinity") or {}).items()
                if source in available[modality]
            }
            searches.append(PlannedSearch(item["query"].strip(), modality, affinity))
        if not searches:
            raise ParseError(f"{PLAN_RECIPE}: the plan names no modality a ready provider serves")
        return Plan(tuple(searches[:max_searches]), str(result.data["rationale"]), self.strategy)

    async def refine(
        self,
        question: str,
        plan: Plan,
        found: Sequence[MergedHit],
        available: Mapping[Modality, Sequence[str]],
    ) -> Plan:
        return await self._refiner.refine(question, plan, found, available)


class LlmEvaluator:
    def __init__(self, light: LightLlm) -> None:
        self.light = light
        self.strategy = f"llm:{EVALUATE_RECIPE}"

    async def evaluate(self, question: str, hits: Sequence[MergedHit]) -> list[Verdict]:
        verdicts: list[Verdict] = []
        for start in range(0, len(hits), EVALUATE_BATCH):
            verdicts += await self._batch(question, hits[start : start + EVALUATE_BATCH])
        return verdicts

    async def _batch(self, question: str, hits: Sequence[MergedHit]) -> list[Verdict]:
        shown = {f"h{i}": merged for i, merged in enumerate(hits, 1)}
        rows: list[dict[str, Any]] = [
            {
                "key": key,
                "title": merged.hit.title,
                "sources": ", ".join(dict.fromkeys(s.instance for s in merged.sources)),
                "text": _text(merged)[:EVALUATE_TEXT_CHARS],
            }
            for key, merged in shown.items()
        ]
        result = await self.light.call_for_json(EVALUATE_RECIPE, {"question": question, "hits": rows})
        verdicts = []
        for item in result.data["verdicts"]:
            merged = shown.get(str(item["key"]))
            if merged is None:
                continue
            verdicts.append(
                Verdict(
                    merged.key, item["verdict"] == "keep", float(item["relevanceScore"]), str(item["reason"])
                )
            )
        return verdicts


def _text(merged: MergedHit) -> str:
    hit = merged.hit
    body = hit.content.text if hit.content is not None and hit.content.text else ""
    return " ".join((body or hit.snippet or "").split())

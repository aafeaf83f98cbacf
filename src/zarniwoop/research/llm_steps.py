"""Plan, Refine and Evaluate through LightLlm recipes (`zarniwoop-research-plan`,
`zarniwoop-research-refine`, `zarniwoop-research-evaluate`).

The recipes are bundled YAML documents with Jinja2 prompts and a JSON schema, overridable per
scope. An answer that names a modality or source that does not exist is cleaned, not trusted: a
planned search for an unknown modality is dropped, an affinity for an unknown source ignored, and
a verdict for a hit that was not shown is discarded (the pipeline reports unjudged hits).

Refine sees the question, the first plan and the first hits with their verdicts, and plans a
second wave. Evaluate cuts the hits into batches that fit the model's context window (from the
catalog); a batch whose call fails is judged by lexical relevance, the others keep the model's
verdicts, and the strategy says which batches fell back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..contract.enums import Modality, SearchDomain
from ..contract.errors import ParseError, ZarniwoopError
from .batching import fit_batches
from .heuristics import LexicalEvaluator
from .model import Evaluation, MergedHit, Plan, PlannedSearch, Verdict, finders
from .strategies import Brief, Verdicts

if TYPE_CHECKING:
    from ..llm.light import LightLlm, Recipe

PLAN_RECIPE = "zarniwoop-research-plan"
REFINE_RECIPE = "zarniwoop-research-refine"
EVALUATE_RECIPE = "zarniwoop-research-evaluate"
EVALUATE_TEXT_CHARS = 600
"""Per hit, enough of the snippet/body to judge relevance; the evaluation prompt stays small."""
REFINE_HITS = 20
"""The first hits the refine recipe sees: enough to tell what was missing."""


class LlmPlanner:
    def __init__(self, light: LightLlm, hints: Mapping[str, str]) -> None:
        self.light = light
        self.hints = hints
        self.strategy = f"llm:{PLAN_RECIPE}"

    def _catalog(
        self, available: Mapping[Modality, Sequence[str]], domains: Mapping[str, frozenset[SearchDomain]]
    ) -> dict[str, list[dict[str, str]]]:
        return {
            modality.value: [
                {
                    "id": i,
                    "hint": " ".join(self.hints.get(i, "").split()),
                    "domains": ", ".join(sorted(d.value for d in domains.get(i, ()))),
                }
                for i in ids
            ]
            for modality, ids in available.items()
        }

    async def plan(self, brief: Brief) -> Plan:
        catalog = self._catalog(brief.available, brief.domains)
        variables = {"question": brief.question, "catalog": catalog, "max_searches": brief.max_searches}
        result = await self.light.call_for_json(PLAN_RECIPE, variables)
        return self._cleaned(result.data, brief.available, brief.max_searches, PLAN_RECIPE, self.strategy)

    def _cleaned(
        self,
        data: Mapping[str, Any],
        available: Mapping[Modality, Sequence[str]],
        max_searches: int,
        recipe: str,
        strategy: str,
    ) -> Plan:
        searches = []
        for item in data["searches"]:
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
            raise ParseError(f"{recipe}: the plan names no modality a ready provider serves")
        return Plan(tuple(searches[:max_searches]), str(data["rationale"]), strategy)

    async def refine(self, brief: Brief, plan: Plan, found: Sequence[MergedHit], verdicts: Verdicts) -> Plan:
        """A second wave from the recipe that sees what the first one found and how it was judged."""
        hits = []
        for merged in found[:REFINE_HITS]:
            verdict = verdicts.get(merged.key)
            hits.append(
                {
                    "title": merged.hit.title,
                    "sources": finders(merged.sources),
                    "verdict": ("keep" if verdict.keep else "drop") if verdict else "not judged",
                    "reason": verdict.reason if verdict else "",
                }
            )
        max_searches = max(1, len(plan.searches))
        variables = {
            "question": brief.question,
            "plan": [s.to_json() for s in plan.searches],
            "hits": hits,
            "catalog": self._catalog(brief.available, {}),
            "max_searches": max_searches,
        }
        result = await self.light.call_for_json(REFINE_RECIPE, variables)
        return self._cleaned(
            result.data, brief.available, max_searches, REFINE_RECIPE, f"llm:{REFINE_RECIPE}"
        )


class LlmEvaluator:
    def __init__(self, light: LightLlm) -> None:
        self.light = light
        self.strategy = f"llm:{EVALUATE_RECIPE}"
        self._fallback = LexicalEvaluator()

    async def evaluate(self, question: str, hits: Sequence[MergedHit]) -> Evaluation:
        shown = {f"h{i}": merged for i, merged in enumerate(hits, 1)}
        rows: list[dict[str, Any]] = [
            {
                "key": label,
                "title": merged.hit.title,
                "sources": finders(merged.sources),
                "text": _text(merged)[:EVALUATE_TEXT_CHARS],
            }
            for label, merged in shown.items()
        ]
        recipe = self.light.recipe(EVALUATE_RECIPE)
        batches = await fit_batches(self.light, recipe, rows, lambda b: {"question": question, "hits": b})
        verdicts: list[Verdict] = []
        failed: list[str] = []
        errors: list[ZarniwoopError] = []
        for number, batch in enumerate(batches, 1):
            batch_hits = {row["key"]: shown[row["key"]] for row in batch}
            try:
                verdicts += await self._batch(recipe, question, batch, batch_hits)
            except ZarniwoopError as exc:  # this batch only: the others keep the model's verdicts
                errors.append(exc)
                failed.append(f"batch {number} of {len(batches)} by lexical: {exc.message}")
                verdicts += (await self._fallback.evaluate(question, list(batch_hits.values()))).verdicts
        if errors and len(errors) == len(batches):
            raise errors[0]  # nothing came from the model: the pipeline's fallback says so
        return Evaluation(tuple(verdicts), "; ".join(failed) or None)

    async def _batch(
        self,
        recipe: Recipe,
        question: str,
        rows: Sequence[Mapping[str, Any]],
        shown: Mapping[str, MergedHit],
    ) -> list[Verdict]:
        result = await self.light.call_for_json(recipe, {"question": question, "hits": list(rows)})
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

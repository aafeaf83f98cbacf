"""Re-rank (seed 000 §12 v2): an optional LLM phase after Evaluate that orders the survivors.

Runs when `research.rerank.recipe` names a recipe (the bundled one is
`zarniwoop-research-rerank`; any scope may bring its own under that or another name). The recipe
sees the question and the surviving hits as `h1…hN` and answers `{"ranking": [{"key", "score"}]}`
with scores from 0 to 1. Batches are cut to the model's context window; scores are comparable
across batches, so the merged order is by score. Hits the model left out keep their order after
the ranked ones. Its order wins over `relevanceScore × affinity`; each hit keeps both numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from .batching import fit_batches
from .insights import recipe_row
from .model import RankedHit

if TYPE_CHECKING:
    from ..llm.light import LightLlm

RERANK_RECIPE_KEY = "research.rerank.recipe"
RERANK_TEXT_CHARS = 600


class LlmReranker:
    def __init__(self, light: LightLlm, recipe: str) -> None:
        self.light = light
        self.recipe_name = recipe
        self.strategy = f"llm:{recipe}"

    async def rerank(self, question: str, hits: Sequence[RankedHit]) -> list[RankedHit]:
        recipe = self.light.recipe(self.recipe_name)
        rows = [recipe_row(f"h{i}", hit, RERANK_TEXT_CHARS) for i, hit in enumerate(hits, 1)]
        by_label = {row["key"]: hit for row, hit in zip(rows, hits, strict=True)}
        scores: dict[str, float] = {}
        for batch in await fit_batches(self.light, recipe, rows, lambda b: {"question": question, "hits": b}):
            result = await self.light.call_for_json(recipe, {"question": question, "hits": list(batch)})
            shown = {row["key"] for row in batch}
            for item in result.data["ranking"]:
                label = str(item["key"])
                if label in shown:
                    scores.setdefault(by_label[label].key, float(item["score"]))
        ranked = sorted((h for h in hits if h.key in scores), key=lambda h: scores[h.key], reverse=True)
        rest = [h for h in hits if h.key not in scores]
        return [replace(h, rerank_score=scores[h.key]) for h in ranked] + rest

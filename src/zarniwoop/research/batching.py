"""Split the hits of a recipe call into batches that fit the model's context window.

One call with 120 hits may overflow a small model's window (the provider answers 400, or worse,
truncates silently). The window comes from the model catalog (`contextWindowTokens` of the model
the call resolves to); each batch holds as many rows as fit in

    window − the recipe's `max_tokens` (room for the answer) − the prompt rendered with no rows

with every row costing what it adds to the rendered prompt, at ≈4 characters a token (the same
estimate the quota holds use). An unknown window falls back to `DEFAULT_BATCH` rows a call.

    batches = await fit_batches(light, recipe, rows, lambda rows: {"question": q, "hits": rows})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ..llm.light import LightLlm, Recipe

DEFAULT_BATCH = 25
"""Rows a call when the catalog does not know the model's context window."""
CHARS_PER_TOKEN = 4
Row = TypeVar("Row", bound=Mapping[str, Any])


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def split_by_budget(costs: Sequence[int], budget: int | None) -> list[range]:
    """Consecutive index ranges whose costs sum to at most `budget` (at least one item each);
    `budget=None` → `DEFAULT_BATCH` items a range."""
    if budget is None:
        return [range(i, min(i + DEFAULT_BATCH, len(costs))) for i in range(0, len(costs), DEFAULT_BATCH)]
    ranges: list[range] = []
    start, used = 0, 0
    for index, cost in enumerate(costs):
        if index > start and used + cost > budget:
            ranges.append(range(start, index))
            start, used = index, 0
        used += cost
    if start < len(costs):
        ranges.append(range(start, len(costs)))
    return ranges


async def fit_batches(
    light: LightLlm,
    recipe: Recipe,
    rows: Sequence[Row],
    variables: Callable[[Sequence[Row]], Mapping[str, Any]],
) -> list[Sequence[Row]]:
    """`rows` cut into batches whose rendered prompts fit the context window of the recipe's model."""
    if not rows:
        return []
    window = await light.context_window(recipe)
    budget = None
    if window is not None:
        empty = estimate_tokens(recipe.render(variables([])))
        budget = max(1, window - recipe.max_tokens - empty - estimate_tokens(recipe.system or ""))
        costs = [estimate_tokens(recipe.render(variables([row]))) - empty for row in rows]
    else:
        costs = [0] * len(rows)
    return [rows[r.start : r.stop] for r in split_by_budget(costs, budget)]

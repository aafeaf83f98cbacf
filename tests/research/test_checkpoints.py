"""A run's kept steps (issue 45): a plan and a search made once are recalled, not made again, and the
keys name no query in clear."""

from __future__ import annotations

import pytest

from zarniwoop.contract import Modality
from zarniwoop.contract.enums import Tier
from zarniwoop.contract.query import SearchRequest
from zarniwoop.contract.results import SearchResult
from zarniwoop.research.checkpoints import recalled_plan, recalled_search
from zarniwoop.research.model import Plan, PlannedSearch

pytestmark = pytest.mark.anyio


class Memory:
    def __init__(self) -> None:
        self.kept: dict[str, dict] = {}

    async def recall(self, key):
        return self.kept.get(key)

    async def keep(self, key, value):
        self.kept[key] = value


async def test_a_kept_plan_and_search_are_recalled_not_made_again():
    memory, made, searched = Memory(), [], []
    plan = Plan((PlannedSearch("crispr off-target", Modality.ACADEMIC, {"oa": 1.2}),), "cues", "llm:plan")

    async def make_plan():
        made.append(1)
        return plan, "llm:plan (fallback: none)"

    async def search(request):
        searched.append(request.query)
        return SearchResult(request.query, request.modality, Tier.NORMAL, "oa")

    request = SearchRequest.create("crispr off-target", Modality.ACADEMIC, max_results=5)
    for _ in range(2):
        assert await recalled_plan("Is CRISPR safe?", memory, make_plan) == (
            plan,
            "llm:plan (fallback: none)",
        )
        assert (await recalled_search(request, search, memory)).provider_instance_id == "oa"
    assert made == [1] and searched == ["crispr off-target"]
    assert sorted(k.split(":")[0] for k in memory.kept) == ["plan", "search"]
    assert not any("crispr" in key.lower() for key in memory.kept)
    # without a checkpoint every step runs
    await recalled_plan("Is CRISPR safe?", None, make_plan)
    await recalled_search(request, search, None)
    assert len(made) == 2 and len(searched) == 2

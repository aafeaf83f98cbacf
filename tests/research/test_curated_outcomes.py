"""The curated-runs counter (seed 000 §10): a run whose LLM plan and evaluate steps fell back to
their built-in strategies counts `plan_failed` and `evaluate_failed`, not `success`."""

from __future__ import annotations

import pytest

from zarniwoop.contract import SearchScope
from zarniwoop.observability.metrics import REGISTRY

from ..support.emulator import Reply
from ..support.llm import ScriptedLlm, Sleeps
from ..support.runtime import open_runtime
from .test_llm_pipeline import ANSWERS, QUESTION, providers

pytestmark = pytest.mark.anyio


def runs(outcome: str) -> float:
    return REGISTRY.get_sample_value("zarniwoop_research_curated_runs_total", {"outcome": outcome}) or 0.0


def boom(prompt, body):
    return Reply.json({"error": "boom"}, status=500)


async def test_a_run_whose_plan_and_evaluate_fell_back_counts_both_failures_not_success(tmp_path, emulator):
    answers = {**ANSWERS, "zarniwoop-research-plan": boom, "zarniwoop-research-evaluate": boom}
    llm = ScriptedLlm(emulator, answers)
    before = {o: runs(o) for o in ("success", "empty", "plan_failed", "evaluate_failed")}
    async with await open_runtime(tmp_path, {**providers(emulator), **llm.settings()}) as rt:
        (await rt.llm()).clock = Sleeps()  # the failover's backoff between retries, not waited
        ranked = await rt.investigator.investigate(QUESTION, SearchScope(), insights=False)
    assert ranked.strategies["plan"].startswith("heuristic (fallback: ")
    assert ranked.strategies["evaluate"].startswith("lexical (fallback: ")
    assert ranked.hits  # the fallbacks answered
    after = {o: runs(o) for o in before}
    assert {o: after[o] - before[o] for o in before} == {
        "success": 0.0,
        "empty": 0.0,
        "plan_failed": 1.0,
        "evaluate_failed": 1.0,
    }

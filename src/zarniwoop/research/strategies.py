"""The strategies an investigation runs with, one `Protocol` a step — Plan (and Refine), Evaluate,
Re-rank — each satisfied by a built-in (`research/heuristics.py`) and an LLM recipe
(`research/llm_steps.py`, `research/rerank.py`); `research/factory.py` picks them per scope."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..contract.enums import SearchDomain

if TYPE_CHECKING:
    from ..contract.enums import Modality
    from ..contract.query import SearchScope
    from .insights import InsightsBuilder
    from .model import Evaluation, MergedHit, Plan, RankedHit, Verdict

Domains = Mapping[str, frozenset[SearchDomain]]


class Planner(Protocol):
    strategy: str

    async def plan(
        self,
        question: str,
        available: Mapping[Modality, Sequence[str]],
        max_searches: int = 4,
        *,
        domains: Domains | None = None,
    ) -> Plan: ...

    async def refine(
        self,
        question: str,
        plan: Plan,
        found: Sequence[MergedHit],
        available: Mapping[Modality, Sequence[str]],
        verdicts: Mapping[str, Verdict] | None = None,
    ) -> Plan: ...


class Evaluator(Protocol):
    strategy: str

    async def evaluate(self, question: str, hits: Sequence[MergedHit]) -> Evaluation: ...


class Reranker(Protocol):
    strategy: str

    async def rerank(self, question: str, hits: Sequence[RankedHit]) -> list[RankedHit]: ...


@dataclass(frozen=True, slots=True)
class Strategies:
    """The strategies one scope's investigation runs with."""

    planner: Planner
    evaluator: Evaluator
    insights: InsightsBuilder
    reranker: Reranker | None = None
    notes: Mapping[str, str] = field(default_factory=dict)
    """Steps that will not run, and why (`{"rerank": "off (no LLM configured)"}`)."""


StrategyChooser = Callable[["SearchScope"], Awaitable[Strategies]]
"""Picks the strategies per scope (LLM recipes where an LLM is configured)."""

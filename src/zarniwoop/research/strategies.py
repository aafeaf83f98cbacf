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
Verdicts = Mapping[str, "Verdict"]
"""The first wave's verdicts by hit key, which a refine may read."""


@dataclass(frozen=True, slots=True)
class Brief:
    """What a wave of searches is planned for: the question and the providers ready for it — the
    instances serving each modality and the domains each covers."""

    question: str
    available: Mapping[Modality, Sequence[str]]
    domains: Domains = field(default_factory=dict)
    max_searches: int = 4


class Planner(Protocol):
    strategy: str

    async def plan(self, brief: Brief) -> Plan: ...

    async def refine(
        self, brief: Brief, plan: Plan, found: Sequence[MergedHit], verdicts: Verdicts
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

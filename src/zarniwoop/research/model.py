"""Data of the curated pipeline: plans, verdicts, ranked and dropped hits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..contract.enums import Modality
from ..contract.results import SearchHit


@dataclass(frozen=True, slots=True)
class PlannedSearch:
    query: str
    modality: Modality
    source_affinity: Mapping[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "modality": self.modality.value,
            "sourceAffinity": dict(self.source_affinity),
        }


@dataclass(frozen=True, slots=True)
class Plan:
    searches: tuple[PlannedSearch, ...]
    rationale: str
    strategy: str
    """`llm:<recipe>` or `heuristic`."""

    def to_json(self) -> dict[str, Any]:
        return {
            "searches": [s.to_json() for s in self.searches],
            "rationale": self.rationale,
            "strategy": self.strategy,
        }


@dataclass(frozen=True, slots=True)
class HitSource:
    """One provider's sighting of a hit: which instance, at which rank, for which planned query."""

    instance: str
    rank: int
    query: str

    def to_json(self) -> dict[str, Any]:
        return {"providerInstanceId": self.instance, "rank": self.rank, "query": self.query}


@dataclass(frozen=True, slots=True)
class MergedHit:
    key: str
    hit: SearchHit
    sources: tuple[HitSource, ...]
    affinity: float
    fusion: float
    """Reciprocal-rank-fusion score over every sighting: agreement across sources raises it."""


@dataclass(frozen=True, slots=True)
class Verdict:
    key: str
    keep: bool
    relevance_score: float
    reason: str


@dataclass(frozen=True, slots=True)
class RankedHit:
    hit: SearchHit
    score: float
    relevance_score: float
    affinity: float
    sources: tuple[HitSource, ...]
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "hit": self.hit.to_json(),
            "score": round(self.score, 4),
            "relevanceScore": round(self.relevance_score, 4),
            "affinity": self.affinity,
            "sources": [s.to_json() for s in self.sources],
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class DroppedHit:
    hit: SearchHit
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"hit": self.hit.to_json(), "reason": self.reason}


@dataclass(frozen=True, slots=True)
class RankedHitSet:
    question: str
    plan: Plan
    hits: tuple[RankedHit, ...]
    dropped: tuple[DroppedHit, ...]
    refine_depth: int
    rationale: str
    strategies: Mapping[str, str]
    searches: tuple[dict[str, Any], ...] = ()
    """Per planned search: which provider served it, how many hits, its error — the provenance."""
    usage: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "plan": self.plan.to_json(),
            "hits": [h.to_json() for h in self.hits],
            "dropped": [d.to_json() for d in self.dropped],
            "refineDepth": self.refine_depth,
            "rationale": self.rationale,
            "strategies": dict(self.strategies),
            "searches": list(self.searches),
            "usage": dict(self.usage),
        }

"""Data of the curated pipeline: plans, verdicts, ranked and dropped hits, insights.

Every ranked and dropped hit carries its `key`, the dedup identity (`doi:…`, `arxiv:…`, `pmid:…`,
`isbn:…`, `olwork:…` or `url:<normalized URL>`); insights cite hits by that key, and a
`RankedHitSet` refuses to exist with a citation to a key that is not among its hits.
"""

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

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PlannedSearch:
        return cls(data["query"], Modality(data["modality"]), dict(data.get("sourceAffinity") or {}))


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

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        searches = tuple(PlannedSearch.from_json(s) for s in data["searches"])
        return cls(searches, data["rationale"], data["strategy"])


@dataclass(frozen=True, slots=True)
class HitSource:
    """One provider's sighting of a hit: which instance, at which rank, for which planned query."""

    instance: str
    rank: int
    query: str

    def to_json(self) -> dict[str, Any]:
        return {"providerInstanceId": self.instance, "rank": self.rank, "query": self.query}


def finders(sources: tuple[HitSource, ...]) -> str:
    """`"oa, wiki"`: the instances that found a hit, each once, in order — as recipes show it."""
    return ", ".join(dict.fromkeys(s.instance for s in sources))


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
class Evaluation:
    """What an Evaluate strategy returns: a verdict per hit it judged, and a note when part of the
    hits were judged by the fallback instead (`"batch 2 of 3 by lexical: HTTP 500"`)."""

    verdicts: tuple[Verdict, ...]
    fallback: str | None = None


@dataclass(frozen=True, slots=True)
class RankedHit:
    key: str
    hit: SearchHit
    score: float
    relevance_score: float
    affinity: float
    sources: tuple[HitSource, ...]
    reason: str = ""
    rerank_score: float | None = None
    """Set when a re-rank recipe ordered the survivors (its order wins over `score`)."""

    def to_json(self) -> dict[str, Any]:
        out = {
            "key": self.key,
            "hit": self.hit.to_json(),
            "score": round(self.score, 4),
            "relevanceScore": round(self.relevance_score, 4),
            "affinity": self.affinity,
            "sources": [s.to_json() for s in self.sources],
            "reason": self.reason,
        }
        if self.rerank_score is not None:
            out["rerankScore"] = round(self.rerank_score, 4)
        return out


@dataclass(frozen=True, slots=True)
class DroppedHit:
    key: str
    hit: SearchHit
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "hit": self.hit.to_json(), "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Claim:
    """One statement the kept hits support; `citations` are hit keys, `support` how many hits back it."""

    text: str
    citations: tuple[str, ...]
    confidence: float

    @property
    def support(self) -> int:
        return len(self.citations)

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "citations": list(self.citations),
            "support": self.support,
            "confidence": round(self.confidence, 4),
        }


@dataclass(frozen=True, slots=True)
class Entity:
    name: str
    type: str
    keys: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "keys": list(self.keys)}


@dataclass(frozen=True, slots=True)
class Insights:
    claims: tuple[Claim, ...]
    entities: tuple[Entity, ...]

    def cited_keys(self) -> set[str]:
        return {k for c in self.claims for k in c.citations} | {k for e in self.entities for k in e.keys}

    def to_json(self) -> dict[str, Any]:
        return {
            "claims": [c.to_json() for c in self.claims],
            "entities": [e.to_json() for e in self.entities],
        }


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
    insights: Insights | None = None
    """None when insights are off (`insights: false`, `research.insights.enabled: false`)."""
    refine_plan: Plan | None = None
    """The second wave's plan when Refine ran (`refine_depth` 1)."""

    def __post_init__(self) -> None:
        if self.insights is not None:
            unknown = self.insights.cited_keys() - {h.key for h in self.hits}
            if unknown:  # a strategy bug, never shown to a caller as if it were evidence
                raise ValueError(f"insights cite keys that are not among the ranked hits: {sorted(unknown)}")
            if any(not c.citations for c in self.insights.claims):
                raise ValueError("every insight claim must cite at least one kept hit")

    @property
    def failures(self) -> list[dict[str, Any]]:
        """The planned searches that failed (every provider errored), with each provider's reason."""
        return [
            {"query": s["query"], "modality": s["modality"], "errorMessage": s["errorMessage"]}
            for s in self.searches
            if s.get("errorMessage")
        ]

    @property
    def failure_summary(self) -> str | None:
        """The failed searches' causes in one line (`dispatch/failures.py`), or None."""
        from ..contract.results import Attempt
        from ..dispatch.failures import summarize

        failed = [s for s in self.searches if s.get("errorMessage")]
        attempts = [Attempt.from_json(a) for s in failed for a in s.get("attempts", ())]
        return summarize(attempts) if attempts else (failed[0]["errorMessage"] if failed else None)

    def to_json(self) -> dict[str, Any]:
        summary = self.failure_summary
        return {
            "question": self.question,
            "plan": self.plan.to_json(),
            "hits": [h.to_json() for h in self.hits],
            "dropped": [d.to_json() for d in self.dropped],
            "refineDepth": self.refine_depth,
            "refinePlan": self.refine_plan.to_json() if self.refine_plan else None,
            "insights": self.insights.to_json() if self.insights else None,
            "failures": self.failures,
            **({"failureSummary": summary} if summary else {}),
            "rationale": self.rationale,
            "strategies": dict(self.strategies),
            "searches": list(self.searches),
            "usage": dict(self.usage),
        }

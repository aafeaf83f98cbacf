"""The curated research pipeline behind `research_investigate` (DESIGN §7).

Plan → concurrent searches → dedup (identity + normalized URL, reciprocal-rank fusion) →
optional Deepen → Evaluate → score = relevanceScore × affinity → optional Refine wave.
Plan and Evaluate use LLM recipes when an LLM is configured, and built-in non-LLM strategies
otherwise, so the tool always works; the output says which strategy ran.
"""

from .model import DroppedHit, Plan, PlannedSearch, RankedHit, RankedHitSet, Verdict
from .pipeline import Investigator

__all__ = ["DroppedHit", "Investigator", "Plan", "PlannedSearch", "RankedHit", "RankedHitSet", "Verdict"]

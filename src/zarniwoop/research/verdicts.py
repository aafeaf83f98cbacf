"""The investigation's pure steps between the LLM's answers: the question checked, a plan cut to
what ready providers serve, and the evaluation's verdicts applied to the merged hits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..contract.enums import Modality
from ..contract.errors import InvalidRequestError
from .model import DroppedHit, MergedHit, Plan, RankedHit, Verdict

MAX_QUESTION_CHARS = 2000
MAX_DEPTH = 3


def validate_question(question: Any, max_results: Any, depth: Any) -> str:
    if not isinstance(question, str) or not question.strip():
        raise InvalidRequestError("question", "must be a non-empty string")
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidRequestError(
            "question", f"must be at most {MAX_QUESTION_CHARS} characters, got {len(question)}"
        )
    if isinstance(max_results, bool) or not isinstance(max_results, int) or not 0 < max_results <= 100:
        raise InvalidRequestError("maxResults", f"must be an integer between 1 and 100, got {max_results!r}")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= MAX_DEPTH:
        raise InvalidRequestError("depth", f"must be an integer between 0 and {MAX_DEPTH}, got {depth!r}")
    return question.strip()


def only_available(plan: Plan, available: Mapping[Modality, Sequence[str]]) -> Plan:
    """Drop planned searches no ready provider can serve (an LLM may plan for absent sources)."""
    return replace(plan, searches=tuple(s for s in plan.searches if available.get(s.modality)))


def apply_verdicts(
    merged: Sequence[MergedHit], verdicts: Sequence[Verdict]
) -> tuple[list[RankedHit], list[DroppedHit]]:
    by_key = {v.key: v for v in verdicts}
    kept: list[RankedHit] = []
    dropped: list[DroppedHit] = []
    for m in merged:
        verdict = by_key.get(m.key)
        if verdict is None:
            dropped.append(
                DroppedHit(m.key, m.hit, "not evaluated: the evaluation returned no verdict for it")
            )
        elif verdict.keep:
            kept.append(
                RankedHit(
                    m.key,
                    m.hit,
                    verdict.relevance_score * m.affinity,
                    verdict.relevance_score,
                    m.affinity,
                    m.sources,
                    verdict.reason,
                )
            )
        else:
            dropped.append(DroppedHit(m.key, m.hit, verdict.reason))
    return kept, dropped


__all__ = ["MAX_DEPTH", "MAX_QUESTION_CHARS", "apply_verdicts", "only_available", "validate_question"]

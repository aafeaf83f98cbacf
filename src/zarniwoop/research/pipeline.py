"""`Investigator`: the curated research pipeline (DESIGN §7, seed §7).

Plan → searches → dedup → (Deepen) → Evaluate → (Refine below `research.investigate.minHits`) →
sort by relevanceScore × affinity → (Re-rank when `research.rerank.recipe` names a recipe) →
cut to maxResults → Insights over the kept hits (unless `insights=False` or
`research.insights.enabled: false`). Each step that has an LLM strategy falls back to its
built-in one when the call fails, and `strategies` says which ran.

investigator = Investigator(runtime.dispatcher)
ranked = await investigator.investigate("off-target effects of CRISPR base editors", scope, max_results=10)
ranked.to_json()  # RankedHitSet {question, plan, hits[…], dropped[…], refineDepth, insights, rationale, usage}

Pass `progress=observer` to hear each step as it ends (`research.progress`): plan, every search
(n/m), dedup, deepen, evaluate, and a refinement round's own steps, then rerank and insights.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from ..contract.enums import Availability, Modality, SearchDomain
from ..contract.errors import InvalidRequestError, ZarniwoopError
from ..dispatch.status import provider_statuses
from ..observability.metrics import record_curated_run
from .heuristics import HeuristicPlanner, LexicalEvaluator
from .insights import ExtractiveInsights, InsightsBuilder
from .model import DroppedHit, Evaluation, Insights, MergedHit, Plan, RankedHit, RankedHitSet, Verdict
from .progress import ProgressObserver, Tracker
from .searches import ContentLoader, PlanSearches

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..dispatch.dispatcher import Dispatcher

log = logging.getLogger(__name__)
MAX_QUESTION_CHARS = 2000
MAX_DEPTH = 3
INSIGHTS_ENABLED = "research.insights.enabled"
MIN_HITS = "research.investigate.minHits"

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


class Investigator:
    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        planner: Planner | None = None,
        evaluator: Evaluator | None = None,
        content_loader: ContentLoader | None = None,
        strategies: StrategyChooser | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.planner = planner or HeuristicPlanner()
        self.evaluator = evaluator or LexicalEvaluator()
        self.strategies = strategies
        self.fallback_planner = HeuristicPlanner()
        self.fallback_evaluator = LexicalEvaluator()
        self.fallback_insights = ExtractiveInsights()
        self.gather = PlanSearches(dispatcher, content_loader)

    async def investigate(
        self,
        question: str,
        scope: SearchScope,
        *,
        max_results: int = 10,
        depth: int = 0,
        insights: bool | None = None,
        progress: ProgressObserver | None = None,
    ) -> RankedHitSet:
        """Run the pipeline; `insights=None` follows `research.insights.enabled` (default on)."""
        question = _validate(question, max_results, depth)
        started = time.perf_counter()
        phase = ["plan"]  # which step a failure belongs to, for the curated-runs metric
        tracker = Tracker(progress)
        try:
            ranked = await self._investigate(
                question, scope, max_results, depth, insights, started, phase, tracker
            )
        except ZarniwoopError:
            record_curated_run(f"{phase[0]}_failed", time.perf_counter() - started)
            raise
        record_curated_run("success" if ranked.hits else "empty", time.perf_counter() - started)
        return ranked

    async def _investigate(
        self,
        question: str,
        scope: SearchScope,
        max_results: int,
        depth: int,
        insights: bool | None,
        started: float,
        phase: list[str],
        tracker: Tracker,
    ) -> RankedHitSet:
        provider_set = await self.dispatcher.factory.providers(scope)
        min_hits = provider_set.settings.get_int(MIN_HITS, 3)
        available, domains = await self._available(scope)
        chosen = (
            await self.strategies(scope)
            if self.strategies
            else Strategies(self.planner, self.evaluator, self.fallback_insights)
        )
        want_insights = (
            provider_set.settings.get_bool(INSIGHTS_ENABLED, True) if insights is None else insights
        )
        strategies: dict[str, str] = {}
        plan, strategies["plan"] = await self._plan(chosen.planner, question, available, domains)
        finishing = (1 if chosen.reranker is not None else 0) + (1 if want_insights else 0)
        tracker.expect(1 + len(plan.searches) + 2 + (1 if depth > 0 else 0) + finishing)
        await tracker.step(
            "plan",
            f"planned {len(plan.searches)} searches ({strategies['plan']})",
            searches=len(plan.searches),
        )
        searches: list[dict[str, Any]] = []
        merged = await self.gather.search_and_merge(plan, scope, max_results, searches, tracker)
        notes: list[str] = []
        if depth > 0:
            merged = await self.gather.deepen(merged, scope, notes)
            await tracker.step("deepen", notes[-1])
        phase[0] = "evaluate"
        evaluation, strategies["evaluate"] = await self._evaluate(chosen.evaluator, question, merged)
        kept, dropped = _apply(merged, evaluation.verdicts)
        await tracker.step(
            "evaluate",
            f"kept {len(kept)}, dropped {len(dropped)} ({strategies['evaluate']})",
            kept=len(kept),
            dropped=len(dropped),
        )
        refine_depth, refine_plan = 0, None
        if len(kept) < min_hits and plan.searches:
            judged = {v.key: v for v in evaluation.verdicts}
            second, refine_strategy = await self._refine(
                chosen.planner, question, plan, merged, available, judged
            )
            if second.searches:
                refine_depth, refine_plan = 1, second
                strategies["refine"] = refine_strategy
                tracker.expect(1 + len(second.searches) + 2 + (1 if depth > 0 else 0))
                await tracker.step(
                    "refine",
                    f"only {len(kept)} relevant: {len(second.searches)} more searches ({refine_strategy})",
                    searches=len(second.searches),
                )
                seen = {m.key for m in merged}
                more = [
                    m
                    for m in await self.gather.search_and_merge(second, scope, max_results, searches, tracker)
                    if m.key not in seen
                ]
                if depth > 0:
                    more = await self.gather.deepen(more, scope, notes)
                    await tracker.step("deepen", notes[-1])
                more_evaluation, _ = await self._evaluate(chosen.evaluator, question, more)
                more_kept, more_dropped = _apply(more, more_evaluation.verdicts)
                await tracker.step(
                    "evaluate",
                    f"kept {len(more_kept)} more, dropped {len(more_dropped)}",
                    kept=len(more_kept),
                    dropped=len(more_dropped),
                )
                kept += more_kept
                dropped += more_dropped
                notes.append(second.rationale)
        kept.sort(key=lambda h: (h.score, h.relevance_score), reverse=True)
        if chosen.reranker is not None:
            kept, strategies["rerank"] = await self._rerank(chosen.reranker, question, kept)
            await tracker.step("rerank", f"re-ranked {len(kept)} ({strategies['rerank']})", hits=len(kept))
        elif "rerank" in chosen.notes:
            strategies["rerank"] = chosen.notes["rerank"]
        final = tuple(kept[:max_results])
        found_insights = None
        if want_insights:
            found_insights, strategies["insights"] = await self._insights(chosen.insights, question, final)
            claims = len(found_insights.claims)
            await tracker.step("insights", f"{claims} claims ({strategies['insights']})", claims=claims)
        else:
            strategies["insights"] = "off"
        if searches and all(s["errorMessage"] for s in searches):
            notes.append(f"every search failed ({len(searches)} of {len(searches)}); see failures")
        rationale = "; ".join([plan.rationale, *notes])
        if len(kept) > max_results:
            rationale += f"; {len(kept) - max_results} further relevant hits beyond maxResults"
        elapsed_ms = round((time.perf_counter() - started) * 1000)
        return RankedHitSet(
            question=question,
            plan=plan,
            hits=final,
            dropped=tuple(dropped),
            refine_depth=refine_depth,
            rationale=rationale,
            strategies=strategies,
            searches=tuple(searches),
            usage={"searches": len(searches), "durationMs": elapsed_ms},
            insights=found_insights,
            refine_plan=refine_plan,
        )

    async def _available(
        self, scope: SearchScope
    ) -> tuple[dict[Modality, list[str]], dict[str, frozenset[SearchDomain]]]:
        """Which ready instances serve each modality, and the domains each covers (for the Plan)."""
        available: dict[Modality, list[str]] = {}
        domains: dict[str, frozenset[SearchDomain]] = {}
        for status in await provider_statuses(self.dispatcher, scope):
            if status.availability in (Availability.READY, Availability.COOLDOWN):
                domains[status.id] = status.domains
                for modality in status.modalities:
                    available.setdefault(modality, []).append(status.id)
        return available, domains

    async def _plan(
        self, planner: Planner, question: str, available: Mapping[Modality, Sequence[str]], domains: Domains
    ) -> tuple[Plan, str]:
        try:
            plan = await planner.plan(question, available, domains=domains)
            return _only_available(plan, available), plan.strategy
        except ZarniwoopError as exc:
            if isinstance(planner, HeuristicPlanner):
                raise
            log.warning("plan step failed (%s); using the heuristic planner", exc.message)
            plan = await self.fallback_planner.plan(question, available, domains=domains)
            return plan, f"{plan.strategy} (fallback: {exc.message})"

    async def _refine(
        self,
        planner: Planner,
        question: str,
        plan: Plan,
        found: Sequence[MergedHit],
        available: Mapping[Modality, Sequence[str]],
        verdicts: Mapping[str, Verdict],
    ) -> tuple[Plan, str]:
        try:
            second = await planner.refine(question, plan, found, available, verdicts)
            return _only_available(second, available), second.strategy
        except ZarniwoopError as exc:
            log.warning("refine step failed (%s); broadening the query instead", exc.message)
            second = await self.fallback_planner.refine(question, plan, found, available)
            return second, f"{second.strategy} (fallback: {exc.message})"

    async def _evaluate(
        self, evaluator: Evaluator, question: str, merged: Sequence[MergedHit]
    ) -> tuple[Evaluation, str]:
        if not merged:
            return Evaluation(()), evaluator.strategy
        try:
            evaluation = await evaluator.evaluate(question, merged)
        except ZarniwoopError as exc:
            if isinstance(evaluator, LexicalEvaluator):
                raise
            log.warning("evaluate step failed (%s); using lexical relevance", exc.message)
            evaluation = await self.fallback_evaluator.evaluate(question, merged)
            return evaluation, f"{self.fallback_evaluator.strategy} (fallback: {exc.message})"
        note = f" ({evaluation.fallback})" if evaluation.fallback else ""
        return evaluation, evaluator.strategy + note

    async def _rerank(
        self, reranker: Reranker, question: str, kept: list[RankedHit]
    ) -> tuple[list[RankedHit], str]:
        try:
            return await reranker.rerank(question, kept), reranker.strategy
        except ZarniwoopError as exc:
            log.warning("re-rank step failed (%s); keeping the evaluate order", exc.message)
            return kept, f"off (fallback: evaluate order kept: {exc.message})"

    async def _insights(
        self, builder: InsightsBuilder, question: str, hits: Sequence[RankedHit]
    ) -> tuple[Insights, str]:
        try:
            return await builder.build(question, hits), builder.strategy
        except ZarniwoopError as exc:
            if isinstance(builder, ExtractiveInsights):
                raise
            log.warning("insights step failed (%s); extracting sentences instead", exc.message)
            found = await self.fallback_insights.build(question, hits)
            return found, f"{self.fallback_insights.strategy} (fallback: {exc.message})"


def _validate(question: Any, max_results: Any, depth: Any) -> str:
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


def _only_available(plan: Plan, available: Mapping[Modality, Sequence[str]]) -> Plan:
    """Drop planned searches no ready provider can serve (an LLM may plan for absent sources)."""
    return replace(plan, searches=tuple(s for s in plan.searches if available.get(s.modality)))


def _apply(
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

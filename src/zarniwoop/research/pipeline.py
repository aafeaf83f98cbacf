"""`Investigator`: the curated research pipeline (DESIGN §7, seed §7).

Plan → searches → dedup → (Deepen) → Evaluate → (Refine below `research.investigate.minHits`) →
sort by relevanceScore × affinity → (Re-rank when `research.rerank.recipe` names a recipe) →
cut to maxResults → Insights over the kept hits (unless `insights=False` or
`research.insights.enabled: false`). Each step that has an LLM strategy falls back to its
built-in one when the call fails, and `strategies` says which ran. The steps' strategy Protocols
are in `strategies.py`; the searches step (run, log, merge) in `searches.py`.

investigator = Investigator(runtime.dispatcher)
ranked = await investigator.investigate("off-target effects of CRISPR base editors", scope, max_results=10)
ranked.to_json()  # RankedHitSet {question, plan, hits[…], dropped[…], refineDepth, insights, rationale, usage}

Pass `progress=observer` to hear each step as it ends (`research.progress`): plan, every search
(n/m), dedup, deepen, evaluate, and a refinement round's own steps, then rerank and insights.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from ..contract.enums import Availability, ContentInline, Modality, SearchDomain
from ..contract.errors import ZarniwoopError
from ..contract.results import ContentRef, SearchHit
from ..dispatch.profiles import GLOBAL_ORDER, ProfileChoice
from ..dispatch.status import provider_statuses
from ..observability.metrics import record_curated_run
from .checkpoints import recalled_plan
from .heuristics import HeuristicPlanner, LexicalEvaluator
from .insights import ExtractiveInsights, InsightsBuilder
from .model import DroppedHit, Evaluation, Insights, MergedHit, Plan, RankedHit, RankedHitSet, Verdict
from .progress import ProgressObserver, Tracker
from .searches import search_and_merge
from .spans import note_strategy, run_span, step
from .strategies import Brief, Evaluator, Planner, Reranker, Strategies, StrategyChooser
from .verdicts import MAX_DEPTH as MAX_DEPTH  # the limits' old home: importers keep working
from .verdicts import MAX_QUESTION_CHARS as MAX_QUESTION_CHARS
from .verdicts import apply_verdicts, only_available, validate_question

if TYPE_CHECKING:
    from ..contract.checkpoint import Checkpoint
    from ..contract.query import SearchScope
    from ..dispatch.dispatcher import BoundSearch, Dispatcher
    from ..dispatch.factory import ProviderSet

log = logging.getLogger(__name__)
DEEPEN_LIMIT = 8
"""How many top hits Deepen loads content for: bodies are large and the evaluation wants the best ones."""

SHORT_TEXT = 500
"""Inline text shorter than this is a snippet, not a body: Deepen loads the page behind it."""

INSIGHTS_ENABLED = "research.insights.enabled"
MIN_HITS = "research.investigate.minHits"

ContentLoader = Callable[[SearchHit, "SearchScope"], Awaitable[str | None]]


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
        self.content_loader = content_loader

    async def investigate(
        self,
        question: str,
        scope: SearchScope,
        *,
        max_results: int = 10,
        depth: int = 0,
        insights: bool | None = None,
        progress: ProgressObserver | None = None,
        cache: bool = True,
        profile: ProfileChoice = GLOBAL_ORDER,
        checkpoint: Checkpoint | None = None,
    ) -> RankedHitSet:
        """Run the pipeline; `insights=None` follows `research.insights.enabled` (default on).
        `cache` and `profile` apply to each planned search (`Dispatcher.search`); `checkpoint`
        keeps each finished search and recalls those a previous run of the same task paid for."""
        question = validate_question(question, max_results, depth)
        started = time.perf_counter()
        phase = ["plan"]  # which step a failure belongs to, for the curated-runs metric
        fell_back: set[str] = set()  # the LLM steps that fell back to their built-in strategy
        tracker = Tracker(progress)
        search = partial(self.dispatcher.search, scope=scope, cache=cache, profile=profile)
        try:
            provider_set = await self.dispatcher.factory.providers(scope)
            with run_span(question, scope, provider_set.settings):
                ranked = await self._investigate(
                    question,
                    scope,
                    search,
                    max_results,
                    depth,
                    insights,
                    started,
                    phase,
                    tracker,
                    fell_back,
                    provider_set,
                    checkpoint,
                )
        except ZarniwoopError:
            record_curated_run(f"{phase[0]}_failed", time.perf_counter() - started)
            raise
        # A run whose plan or evaluate step fell back answered, but not as configured: each step that
        # fell back counts its `<step>_failed` (seed 000 §10), and the run counts no `success`.
        outcomes = [f"{step}_failed" for step in ("plan", "evaluate") if step in fell_back]
        for outcome in outcomes or ["success" if ranked.hits else "empty"]:
            record_curated_run(outcome, time.perf_counter() - started)
        return ranked

    async def _investigate(
        self,
        question: str,
        scope: SearchScope,
        search: BoundSearch,
        max_results: int,
        depth: int,
        insights: bool | None,
        started: float,
        phase: list[str],
        tracker: Tracker,
        fell_back: set[str],
        provider_set: ProviderSet,
        checkpoint: Checkpoint | None = None,
    ) -> RankedHitSet:
        min_hits = provider_set.settings.get_int(MIN_HITS, 3)
        brief = await self._brief(scope, question)
        chosen = (
            await self.strategies(scope)
            if self.strategies
            else Strategies(self.planner, self.evaluator, self.fallback_insights)
        )
        want_insights = (
            provider_set.settings.get_bool(INSIGHTS_ENABLED, True) if insights is None else insights
        )
        strategies: dict[str, str] = {}
        with step("plan"):
            plan, strategies["plan"] = await recalled_plan(
                question,
                checkpoint,
                lambda: self._plan(chosen.planner, brief, fell_back),
            )
            note_strategy(strategies["plan"])
        finishing = (1 if chosen.reranker is not None else 0) + (1 if want_insights else 0)
        tracker.expect(1 + len(plan.searches) + 2 + (1 if depth > 0 else 0) + finishing)
        await tracker.step(
            "plan",
            f"planned {len(plan.searches)} searches ({strategies['plan']})",
            searches=len(plan.searches),
        )
        searches: list[dict[str, Any]] = []
        merged = await search_and_merge(plan, search, max_results, searches, tracker, checkpoint)
        notes: list[str] = []
        if depth > 0:
            with step("deepen"):
                merged = await self._deepen(merged, scope, notes)
            await tracker.step("deepen", notes[-1])
        phase[0] = "evaluate"
        evaluation, strategies["evaluate"], kept, dropped = await self._evaluate(
            chosen.evaluator,
            question,
            merged,
            fell_back,
            tracker,
            "kept {kept}, dropped {dropped} ({strategy})",
        )
        refine_depth, refine_plan = 0, None
        if len(kept) < min_hits and plan.searches:
            judged = {v.key: v for v in evaluation.verdicts}
            with step("refine"):
                second, refine_strategy = await self._refine(chosen.planner, brief, plan, merged, judged)
                note_strategy(refine_strategy)
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
                    for m in await search_and_merge(
                        second, search, max_results, searches, tracker, checkpoint
                    )
                    if m.key not in seen
                ]
                if depth > 0:
                    with step("deepen"):
                        more = await self._deepen(more, scope, notes)
                    await tracker.step("deepen", notes[-1])
                _, _, more_kept, more_dropped = await self._evaluate(
                    chosen.evaluator,
                    question,
                    more,
                    fell_back,
                    tracker,
                    "kept {kept} more, dropped {dropped}",
                )
                kept += more_kept
                dropped += more_dropped
                notes.append(second.rationale)
        kept.sort(key=lambda h: (h.score, h.relevance_score), reverse=True)
        if chosen.reranker is not None:
            with step("rerank"):
                kept, strategies["rerank"] = await self._rerank(chosen.reranker, question, kept)
                note_strategy(strategies["rerank"])
            await tracker.step("rerank", f"re-ranked {len(kept)} ({strategies['rerank']})", hits=len(kept))
        elif "rerank" in chosen.notes:
            strategies["rerank"] = chosen.notes["rerank"]
        final = tuple(kept[:max_results])
        found_insights = None
        if want_insights:
            with step("insights"):
                found_insights, strategies["insights"] = await self._insights(
                    chosen.insights, question, final
                )
                note_strategy(strategies["insights"])
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

    async def _brief(self, scope: SearchScope, question: str) -> Brief:
        """The question with the ready instances serving each modality and the domains each covers."""
        available: dict[Modality, list[str]] = {}
        domains: dict[str, frozenset[SearchDomain]] = {}
        for status in await provider_statuses(self.dispatcher, scope):
            if status.availability in (Availability.READY, Availability.COOLDOWN):
                domains[status.id] = status.domains
                for modality in status.modalities:
                    available.setdefault(modality, []).append(status.id)
        return Brief(question, available, domains)

    async def _plan(self, planner: Planner, brief: Brief, fell_back: set[str]) -> tuple[Plan, str]:
        try:
            plan = await planner.plan(brief)
            return only_available(plan, brief.available), plan.strategy
        except ZarniwoopError as exc:
            if isinstance(planner, HeuristicPlanner):
                raise
            log.warning("plan step failed (%s); using the heuristic planner", exc.message)
            fell_back.add("plan")
            plan = await self.fallback_planner.plan(brief)
            return plan, f"{plan.strategy} (fallback: {exc.message})"

    async def _refine(
        self,
        planner: Planner,
        brief: Brief,
        plan: Plan,
        found: Sequence[MergedHit],
        verdicts: Mapping[str, Verdict],
    ) -> tuple[Plan, str]:
        try:
            second = await planner.refine(brief, plan, found, verdicts)
            return only_available(second, brief.available), second.strategy
        except ZarniwoopError as exc:
            log.warning("refine step failed (%s); broadening the query instead", exc.message)
            second = await self.fallback_planner.refine(brief, plan, found, verdicts)
            return second, f"{second.strategy} (fallback: {exc.message})"

    async def _evaluate(
        self,
        evaluator: Evaluator,
        question: str,
        merged: Sequence[MergedHit],
        fell_back: set[str],
        tracker: Tracker,
        report: str,
    ) -> tuple[Evaluation, str, list[RankedHit], list[DroppedHit]]:
        """The evaluate step: the hits judged, split into kept and dropped, and told to the tracker
        as `report` says (formatted with the `kept` and `dropped` counts and the `strategy`)."""
        with step("evaluate"):
            evaluation, strategy = await self._judge(evaluator, question, merged, fell_back)
            note_strategy(strategy)
        kept, dropped = apply_verdicts(merged, evaluation.verdicts)
        message = report.format(kept=len(kept), dropped=len(dropped), strategy=strategy)
        await tracker.step("evaluate", message, kept=len(kept), dropped=len(dropped))
        return evaluation, strategy, kept, dropped

    async def _judge(
        self, evaluator: Evaluator, question: str, merged: Sequence[MergedHit], fell_back: set[str]
    ) -> tuple[Evaluation, str]:
        if not merged:
            return Evaluation(()), evaluator.strategy
        try:
            evaluation = await evaluator.evaluate(question, merged)
        except ZarniwoopError as exc:
            if isinstance(evaluator, LexicalEvaluator):
                raise
            log.warning("evaluate step failed (%s); using lexical relevance", exc.message)
            fell_back.add("evaluate")
            evaluation = await self.fallback_evaluator.evaluate(question, merged)
            return evaluation, f"{self.fallback_evaluator.strategy} (fallback: {exc.message})"
        note = f" ({evaluation.fallback})" if evaluation.fallback else ""
        if evaluation.fallback:  # some batches were judged lexically
            fell_back.add("evaluate")
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

    async def _deepen(self, merged: list[MergedHit], scope: SearchScope, notes: list[str]) -> list[MergedHit]:
        """Load bodies for the top hits that carry no text or only a snippet, so Evaluate sees more."""
        if self.content_loader is None:
            notes.append("deepen skipped: no content loader configured")
            return merged
        targets = [m for m in merged[:DEEPEN_LIMIT] if len(_inline_text(m.hit)) < SHORT_TEXT]
        loaded = await asyncio.gather(
            *(self.content_loader(m.hit, scope) for m in targets), return_exceptions=True
        )
        texts = {
            m.key: text for m, text in zip(targets, loaded, strict=True) if isinstance(text, str) and text
        }
        notes.append(f"deepened {len(texts)} of {len(targets)} hits")
        return [
            replace(m, hit=replace(m.hit, content=ContentRef(ContentInline.EMBED_TEXT, text=texts[m.key])))
            if m.key in texts
            else m
            for m in merged
        ]


def _inline_text(hit: SearchHit) -> str:
    return (hit.content.text or "") if hit.content is not None else ""

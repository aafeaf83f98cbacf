"""The non-LLM Plan and Evaluate strategies: the pipeline works with no LLM configured.

Plan: pick modalities from cues in the question (a study/trial/paper question wants ACADEMIC,
"latest …" wants NEWS, "what is …" wants ENCYCLOPEDIA, …) among those a ready provider serves;
web-style modalities get the question as asked, index-style ones (academic, books, encyclopedia)
its key terms, which is what their search engines match best. Subject cues pick domains too (a
clinical question → BIOMEDICAL, a theorem → STEM, software → TECH): a source whose `domains()`
cover a cued domain gets affinity `DOMAIN_AFFINITY` instead of 1.0, so PubMed outranks a general
index on a clinical question.

Evaluate: lexical relevance — how many of the question's key terms a hit's title and text contain,
with title matches weighing more and agreement across sources adding a little. Hits matching too
few key terms are dropped, and the reason names the terms they miss.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..contract.enums import Modality, SearchDomain
from .model import Evaluation, MergedHit, Plan, PlannedSearch, Verdict
from .strategies import Brief, Verdicts


def _words(text: str) -> list[str]:
    return text.split()


_WORD = re.compile(r"[\w][\w\-+.]*[\w+]|\w", re.UNICODE)
STOPWORDS = frozenset(
    _words(
        "a about above after again against all am an and any are as at be because been before being below "
        "between both but by can could did do does doing down during each few for from further had has "
        "have having he her here hers herself him himself his how i if in into is it its itself just me "
        "more most my myself no nor not now of off on once only or other our ours ourselves out over own "
        "same she should so some such than that the their theirs them themselves then there these they "
        "this those through to too under until up very was we were what when where which while who whom "
        "why will with would you your yours yourself yourselves tell show find explain give list known "
        "know best good does many much use used using vs versus "
    )
)


def _cues(text: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in text.split("|") if c.strip())


CUES: dict[Modality, tuple[str, ...]] = {
    Modality.ACADEMIC: _cues(
        "study|studies|paper|papers|evidence|trial|trials|clinical|review|meta-analysis|effect|effects|"
        "mechanism|research|peer-reviewed|dataset|benchmark|algorithm|hypothesis|cohort|randomized|"
        "literature|citation|theorem|protein|gene|disease"
    ),
    Modality.NEWS: _cues("latest|recent|recently|news|today|yesterday|announced|this week|breaking|update"),
    Modality.BOOK: _cues("book|books|novel|novels|author|written by|isbn|edition|publisher"),
    Modality.ENCYCLOPEDIA: _cues(
        "what is|what are|who is|who was|history of|define|definition|overview|biography"
    ),
    Modality.PDF: _cues("pdf|whitepaper|report|specification|datasheet"),
    Modality.INTERNAL_DOC: _cues(
        "our|we decided|internal|my notes|our notes|meeting|minutes|memo|wiki page|runbook|onboarding|policy"
    ),
}
DOMAIN_CUES: dict[SearchDomain, tuple[str, ...]] = {
    SearchDomain.BIOMEDICAL: _cues(
        "clinical|disease|patient|patients|drug|drugs|gene|genes|protein|cancer|therapy|medical|medicine|"
        "health|vaccine|trial|trials|crispr|cell|cells|biomedical|diagnosis|symptom|symptoms|virus"
    ),
    SearchDomain.STEM: _cues(
        "physics|theorem|proof|quantum|mathematics|math|equation|algorithm|neural network|machine learning"
    ),
    SearchDomain.TECH: _cues("software|programming|startup|framework|library|open source|developer|api"),
}
DOMAIN_AFFINITY = 1.3
INDEX_STYLE = frozenset({Modality.ACADEMIC, Modality.BOOK, Modality.ENCYCLOPEDIA})
DEFAULT_ORDER = (Modality.WEB, Modality.ACADEMIC, Modality.ENCYCLOPEDIA, Modality.NEWS)
KEEP_THRESHOLD = 0.34


def key_terms(text: str) -> list[str]:
    """Lower-cased content words, in order, without duplicates or stop words."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if (len(word) > 1 and word not in STOPWORDS and not word.isdigit()) or re.fullmatch(
            r"(19|20)\d\d", word
        ):
            seen.setdefault(word.strip(".-"), None)
    return [w for w in seen if w]


def stem(word: str) -> str:
    """A light plural stemmer: `studies` → `study`, `effects` → `effect` (words over 4 letters)."""
    for suffix in ("ies", "es", "s"):
        if len(word) > 4 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


class HeuristicPlanner:
    strategy = "heuristic"

    async def plan(self, brief: Brief) -> Plan:
        question, available, domains = brief.question, brief.available, brief.domains
        lowered = f" {question.lower()} "
        words = f" {' '.join(_WORD.findall(question.lower()))} "
        cued = {d for d, cues in DOMAIN_CUES.items() if any(f" {c} " in words for c in cues)}

        def affinity(instance: str) -> float:
            return DOMAIN_AFFINITY if cued & domains.get(instance, frozenset()) else 1.0

        wanted = [
            m for m, cues in CUES.items() if any(f" {c}" in lowered or f"{c} " in lowered for c in cues)
        ]
        for modality in DEFAULT_ORDER:
            if modality not in wanted:
                wanted.append(modality)
        chosen = [m for m in wanted if available.get(m)][: brief.max_searches]
        terms = " ".join(key_terms(question)) or question
        searches = tuple(
            PlannedSearch(terms if m in INDEX_STYLE else question, m, {i: affinity(i) for i in available[m]})
            for m in chosen
        )
        cue_hits = [
            m.value for m in wanted[: len(chosen)] if m in CUES and any(c in lowered for c in CUES[m])
        ]
        rationale = (
            f"cues for {', '.join(cue_hits)}; " if cue_hits else "no strong cue; "
        ) + f"searching {', '.join(m.value for m in chosen) or 'nothing (no provider is ready)'}"
        if cued:
            rationale += f"; {', '.join(sorted(d.value for d in cued))} sources preferred"
        return Plan(searches, rationale, self.strategy)

    async def refine(self, brief: Brief, plan: Plan, found: Sequence[MergedHit], verdicts: Verdicts) -> Plan:
        """A second wave: the key terms alone (broader), on the modalities the first wave used."""
        terms, available = key_terms(brief.question), brief.available
        broader = " ".join(terms[: max(2, len(terms) - 1)]) if len(terms) > 2 else " ".join(terms)
        used = {s.modality for s in plan.searches}
        searches = tuple(
            PlannedSearch(broader, m, {i: 1.0 for i in available.get(m, ())})
            for m in used
            if available.get(m)
            and broader
            and broader != next((s.query for s in plan.searches if s.modality is m), None)
        )
        return Plan(searches, f"refine: broader query {broader!r} after {len(found)} hits", self.strategy)


class LexicalEvaluator:
    strategy = "lexical"

    async def evaluate(self, question: str, hits: Sequence[MergedHit]) -> Evaluation:
        terms = [stem(t) for t in key_terms(question)]
        verdicts = []
        for merged in hits:
            hit = merged.hit
            title = {stem(t) for t in key_terms(hit.title)}
            body_text = " ".join(
                filter(
                    None, [hit.snippet, hit.content.text[:4000] if hit.content and hit.content.text else None]
                )
            )
            body = {stem(t) for t in key_terms(body_text)} | title
            if not terms:
                verdicts.append(Verdict(merged.key, True, 0.5, "question has no key terms to match"))
                continue
            in_title = [t for t in terms if t in title]
            in_body = [t for t in terms if t in body]
            coverage = 0.6 * len(in_title) / len(terms) + 0.4 * len(in_body) / len(terms)
            agreement = min(0.2, 0.1 * (len({s.instance for s in merged.sources}) - 1))
            score = round(min(1.0, coverage + agreement), 4)
            missing = [t for t in terms if t not in body]
            if score >= KEEP_THRESHOLD:
                reason = f"matches {len(in_body)}/{len(terms)} key terms"
                if len({s.instance for s in merged.sources}) > 1:
                    reason += f"; found by {len({s.instance for s in merged.sources})} sources"
                verdicts.append(Verdict(merged.key, True, score, reason))
            else:
                verdicts.append(
                    Verdict(
                        merged.key,
                        False,
                        score,
                        f"matches {len(in_body)}/{len(terms)} key terms; missing {', '.join(missing[:5])}",
                    )
                )
        return Evaluation(tuple(verdicts))

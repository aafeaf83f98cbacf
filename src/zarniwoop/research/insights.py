"""Insights (seed 000 §2, the seed's ZarniwoopInsightsService): the kept hits turned into cited claims
and entities.

`LlmInsights` asks the recipe `zarniwoop-research-insights` (bundled, overridable per scope). The
model sees the hits as `h1…hN` and cites those labels; they are mapped back to the hits' dedup
keys, and a citation to a label it was not shown is dropped — a claim left with none is dropped
too. `RankedHitSet` re-checks the result: a citation outside its hits is refused as a bug.

`ExtractiveInsights` is the fallback without an LLM (or when the call fails):

- claims: the sentences of the kept hits' text (snippet, inline body) that cover most of the
  question's key terms (stemmed, at least one), best first, at most `MAX_CLAIMS`; a sentence that
  several hits carry cites each of them. `confidence` = the share of key terms it covers.
- entities: authors and venues from the hits' extras (types `person`, `venue`) and acronyms —
  all-capital words of 2–8 letters or digits such as CRISPR or GPT-4 — from titles and text (type
  `term`), each with the keys of the hits naming it, those named by most hits first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .heuristics import key_terms, stem
from .model import Claim, Entity, Insights, RankedHit, finders

if TYPE_CHECKING:
    from ..llm.light import LightLlm

INSIGHTS_RECIPE = "zarniwoop-research-insights"
MAX_CLAIMS = 5
MAX_ENTITIES = 12
INSIGHTS_TEXT_CHARS = 1200
"""Per hit, the text the insights recipe sees; claims need more than the evaluation's snippet."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]{1,7}(?:-[0-9A-Z]{1,4})?\b")
MIN_SENTENCE_CHARS = 30


class InsightsBuilder(Protocol):
    strategy: str

    async def build(self, question: str, hits: Sequence[RankedHit]) -> Insights: ...


def hit_text(hit: RankedHit) -> str:
    body = hit.hit.content.text if hit.hit.content is not None and hit.hit.content.text else ""
    return " ".join(" ".join(filter(None, [hit.hit.snippet, body])).split())


def recipe_row(label: str, hit: RankedHit, chars: int) -> dict[str, Any]:
    """A kept hit as the insights and re-rank recipes show it: `[h3] title / source / text`."""
    return {
        "key": label,
        "title": hit.hit.title,
        "sources": finders(hit.sources),
        "text": hit_text(hit)[:chars],
    }


class ExtractiveInsights:
    strategy = "extractive"

    async def build(self, question: str, hits: Sequence[RankedHit]) -> Insights:
        return Insights(_claims(question, hits), _entities(hits))


def _claims(question: str, hits: Sequence[RankedHit]) -> tuple[Claim, ...]:
    terms = {stem(t) for t in key_terms(question)}
    if not terms:
        return ()
    scored: dict[str, tuple[float, list[str]]] = {}
    for hit in hits:
        for sentence in _SENTENCE.split(hit_text(hit)):
            sentence = sentence.strip()
            if len(sentence) < MIN_SENTENCE_CHARS:
                continue
            covered = terms & {stem(t) for t in key_terms(sentence)}
            if not covered:
                continue
            _, keys = scored.setdefault(sentence, (len(covered) / len(terms), []))
            if hit.key not in keys:
                keys.append(hit.key)
    best = sorted(scored.items(), key=lambda item: (item[1][0], len(item[1][1])), reverse=True)
    return tuple(Claim(text, tuple(keys), coverage) for text, (coverage, keys) in best[:MAX_CLAIMS])


def _entities(hits: Sequence[RankedHit]) -> tuple[Entity, ...]:
    found: dict[tuple[str, str], list[str]] = {}

    def add(name: str, kind: str, key: str) -> None:
        name = " ".join(name.split())
        if not name:
            return
        keys = found.setdefault((name, kind), [])
        if key not in keys:
            keys.append(key)

    for hit in hits:
        extras = hit.hit.extras
        authors = extras.get("authors") or []
        for author in authors if isinstance(authors, list) else [authors]:
            add(str(author), "person", hit.key)
        if extras.get("venue"):
            add(str(extras["venue"]), "venue", hit.key)
        for acronym in _ACRONYM.findall(f"{hit.hit.title} {hit_text(hit)}"):
            add(acronym, "term", hit.key)
    ranked = sorted(found.items(), key=lambda item: len(item[1]), reverse=True)
    return tuple(Entity(name, kind, tuple(keys)) for (name, kind), keys in ranked[:MAX_ENTITIES])


class LlmInsights:
    def __init__(self, light: LightLlm) -> None:
        self.light = light
        self.strategy = f"llm:{INSIGHTS_RECIPE}"

    async def build(self, question: str, hits: Sequence[RankedHit]) -> Insights:
        if not hits:
            return Insights((), ())
        shown = {f"h{i}": hit for i, hit in enumerate(hits, 1)}
        rows = [recipe_row(label, hit, INSIGHTS_TEXT_CHARS) for label, hit in shown.items()]
        result = await self.light.call_for_json(INSIGHTS_RECIPE, {"question": question, "hits": rows})
        claims = []
        for item in result.data["claims"]:
            keys = _mapped(item.get("citations"), shown)
            if keys:
                claims.append(Claim(str(item["text"]).strip(), keys, float(item.get("confidence", 0.5))))
        entities = []
        for item in result.data.get("entities") or []:
            keys = _mapped(item.get("keys"), shown)
            if keys:
                entities.append(Entity(str(item["name"]).strip(), str(item.get("type") or "term"), keys))
        return Insights(tuple(claims), tuple(entities))


def _mapped(labels: Any, shown: dict[str, RankedHit]) -> tuple[str, ...]:
    """The dedup keys of the labels the model cited; labels it was not shown are dropped."""
    if not isinstance(labels, list):
        return ()
    return tuple(dict.fromkeys(shown[str(label)].key for label in labels if str(label) in shown))

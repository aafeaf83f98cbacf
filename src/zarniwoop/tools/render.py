"""The text a model reads: numbered hits, the same whichever provider answered.

    [1] Fermat's Last Theorem
        https://en.wikipedia.org/wiki/Fermat%27s_Last_Theorem
        In number theory, Fermat's Last Theorem states that …
    [2] …

    (via wikipedia — wiki-mirror fell over)

The provenance footer (DESIGN §5) is appended only when `research.provenance` is on, so the
default output is byte-identical whichever provider served it (downstream parsers keep working).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..contract.enums import Modality
from ..contract.results import SearchHit, SearchResult
from ..dispatch.dispatcher import provenance_footer

if TYPE_CHECKING:
    from ..research.model import RankedHitSet

SNIPPET_CHARS = 300
_EXTRA_LABELS: dict[Modality, tuple[tuple[str, str], ...]] = {
    Modality.ACADEMIC: (("authors", ""), ("year", ""), ("venue", ""), ("doi", "doi:"), ("pdfUrl", "pdf: ")),
    Modality.IMAGE: (("imageUrl", "image: "),),
    Modality.VIDEO: (("channel", ""), ("duration", "")),
    Modality.NEWS: (("outlet", ""), ("publishedAt", "")),
    Modality.BOOK: (("authors", ""), ("firstPublishYear", ""), ("isbn", "isbn ")),
}


def render_hits(hits: Sequence[SearchHit]) -> str:
    lines: list[str] = []
    for number, hit in enumerate(hits, 1):
        lines.append(f"[{number}] {_one_line(hit.title) or hit.url}")
        lines.append(f"    {hit.url}")
        details = _details(hit)
        if details:
            lines.append(f"    {details}")
        snippet = _one_line(hit.snippet or "")
        if snippet:
            cut = snippet if len(snippet) <= SNIPPET_CHARS else snippet[: SNIPPET_CHARS - 1].rstrip() + "…"
            lines.append(f"    {cut}")
    return "\n".join(lines)


def render_result(result: SearchResult, *, provenance: bool) -> str:
    """One search: the hits, a line on why there are none, the note, and the footer when enabled."""
    parts: list[str] = []
    if result.hits:
        parts.append(render_hits(result.hits))
    elif result.error_message:
        parts.append(f"No results for {result.query!r} ({result.modality.value}): {result.error_message}")
    else:
        parts.append(f"No results for {result.query!r} ({result.modality.value}).")
    if result.note:
        parts.append(f"Note: {result.note}")
    if provenance:
        footer = provenance_footer(result)
        if footer:
            parts.append(footer)
    return "\n\n".join(parts)


def render_rich(results: Mapping[Modality, SearchResult], *, provenance: bool) -> str:
    sections = []
    for modality, result in results.items():
        count = f"{result.returned_count} hit{'s' if result.returned_count != 1 else ''}"
        sections.append(f"## {modality.value} — {count}\n\n{render_result(result, provenance=provenance)}")
    return "\n\n".join(sections)


def render_providers(entries: Sequence[Mapping[str, Any]]) -> str:
    lines = []
    for e in entries:
        state = e["availability"]
        if e.get("cooldownUntil"):
            state += f" until {e['cooldownUntil']}"
        key = "" if e["keyable"] else ", no key"
        reachable = {True: "reachable", False: "last call failed", None: "not called yet"}[e["reachable"]]
        lines.append(
            f"- {e['id']} ({e['displayName']}): {' '.join(e['modalities'])} — {state}{key}, {reachable}"
        )
        if e.get("statusText"):
            lines.append(f"    status: {e['statusText']}")
        if e.get("lastError"):
            lines.append(f"    last error: {e['lastError']}")
    return "\n".join(lines) if lines else "No provider instances are configured in this scope."


def render_investigation(ranked: RankedHitSet) -> str:
    """Ranked hits with score, finders and reason; then the dropped ones and the strategies that ran."""
    parts: list[str] = []
    if ranked.hits:
        lines = []
        for number, item in enumerate(ranked.hits, 1):
            finders = ", ".join(dict.fromkeys(source.instance for source in item.sources))
            lines.append(f"[{number}] {_one_line(item.hit.title) or item.hit.url}")
            lines.append(f"    {item.hit.url}")
            lines.append(
                f"    score {item.score:.2f} · found by {finders}"
                + (f" · {item.reason}" if item.reason else "")
            )
            snippet = _one_line(item.hit.snippet or "")
            if snippet:
                cut = (
                    snippet if len(snippet) <= SNIPPET_CHARS else snippet[: SNIPPET_CHARS - 1].rstrip() + "…"
                )
                lines.append(f"    {cut}")
        parts.append("\n".join(lines))
    else:
        failed = [
            f"{s['query']} ({s['modality']}): {s['errorMessage']}"
            for s in ranked.searches
            if s.get("errorMessage")
        ]
        parts.append(
            f"No relevant hits for {ranked.question!r}."
            + (" Failed searches: " + "; ".join(failed) if failed else "")
        )
    if ranked.insights is not None and (ranked.insights.claims or ranked.insights.entities):
        parts.append(_render_insights(ranked))
    if ranked.dropped:
        shown = "; ".join(f"{_one_line(d.hit.title)} — {d.reason}" for d in ranked.dropped[:10])
        more = f" (and {len(ranked.dropped) - 10} more)" if len(ranked.dropped) > 10 else ""
        parts.append(f"Dropped {len(ranked.dropped)}: {shown}{more}")
    strategies = " · ".join(f"{step}: {name}" for step, name in ranked.strategies.items())
    parts.append(f"({strategies})" if strategies else "")
    return "\n\n".join(p for p in parts if p)


def _render_insights(ranked: RankedHitSet) -> str:
    """Claims with the numbers of the hits they cite (`[1, 3]`), then the entities named most."""
    assert ranked.insights is not None
    number = {item.key: n for n, item in enumerate(ranked.hits, 1)}

    def cites(keys: Sequence[str]) -> str:
        return "[" + ", ".join(str(number[k]) for k in keys) + "]"

    lines = ["Insights:"]
    lines += [f"- {_one_line(c.text)} {cites(c.citations)}" for c in ranked.insights.claims]
    if ranked.insights.entities:
        names = "; ".join(f"{e.name} ({e.type}) {cites(e.keys)}" for e in ranked.insights.entities)
        lines.append(f"Entities: {names}")
    return "\n".join(lines)


def _details(hit: SearchHit) -> str:
    labels = _EXTRA_LABELS.get(hit.modality, ())
    parts = []
    for key, prefix in labels:
        value = hit.extras.get(key)
        if value in (None, "", []):
            continue
        if isinstance(value, list):
            shown = ", ".join(str(v) for v in value[:3]) + (" et al." if len(value) > 3 else "")
        else:
            shown = str(value)
        parts.append(prefix + shown)
    return " · ".join(parts)


def _one_line(text: str) -> str:
    return " ".join(text.split())


__all__ = ["render_hits", "render_investigation", "render_providers", "render_result", "render_rich"]

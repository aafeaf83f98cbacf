"""The search filters after the call: what the wire left out is reported, and domain filters are
applied to the hits (issue 47).

A protocol says which filters its request expressed (`RequestSpec.state["honoured"]`, carried on
as `SearchResult.honoured`). Every other filter the caller set is named in `ignoredParams` with
the reason — except the domain filters, which any provider can honour after the fact: a hit
outside `includeDomains` or inside `excludeDomains` is dropped here, the one post-filter, and
counted in `droppedCount` under its reason (`droppedReasons`). It runs on every answer, even one
whose wire took `site:`/`-site:`: an engine that ignores an operator still never leaks a hit.

With `strictFilters` the gate skips a candidate whose protocol declares no support for a set
filter (`gate.check_filters`), before any call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..contract.filters import DOMAIN_FILTERS, NO_FILTERS, domain_matches
from ..contract.results import IgnoredParam
from ..protocols._web import hostname

if TYPE_CHECKING:
    from ..contract.query import SearchRequest
    from ..contract.results import SearchHit, SearchResult

_NOT_FILTERED = frozenset({"page"})
"""`page` is not a filter of the answer: a cursor resumes on the instance that made it."""


def apply_filters(request: SearchRequest, result: SearchResult, protocol_id: str) -> SearchResult:
    """`result` with the unhonoured filters in `ignored_params` and the domain filters applied."""
    filters = request.filters
    if filters is NO_FILTERS or result.error_message is not None:
        return result
    honoured = result.honoured or frozenset()
    ignored = [
        IgnoredParam(name, f"{protocol_id} has no way to express {name} on its wire")
        for name in filters.requested()
        if name not in honoured and name not in DOMAIN_FILTERS and name not in _NOT_FILTERED
    ]
    kept: list[SearchHit] = []
    dropped = dict(result.dropped_reasons)
    for hit in result.hits:
        reason = _outside(hit, filters.include_domains, filters.exclude_domains)
        if reason is None:
            kept.append(hit)
        else:
            dropped[reason] = dropped.get(reason, 0) + 1
    removed = len(result.hits) - len(kept)
    notes = [result.note] if result.note else []
    for name in ("includeDomains", "excludeDomains"):
        if dropped.get(name) and name not in honoured:
            notes.append(
                f"{name} applied to the hits ({protocol_id} cannot express it): {dropped[name]} dropped"
            )
    return result.with_(
        hits=tuple(kept),
        dropped_count=result.dropped_count + removed,
        dropped_reasons=dropped,
        ignored_params=(*result.ignored_params, *ignored),
        note="; ".join(notes) or None,
    )


def _outside(hit: SearchHit, include: tuple[str, ...], exclude: tuple[str, ...]) -> str | None:
    """The filter that drops `hit`, or None when it passes both."""
    if not include and not exclude:
        return None
    host = hostname(hit.url) or ""
    if include and not domain_matches(host, include):
        return "includeDomains"
    if exclude and domain_matches(host, exclude):
        return "excludeDomains"
    return None


__all__ = ["apply_filters"]

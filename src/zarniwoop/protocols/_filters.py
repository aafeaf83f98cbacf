"""Helpers the protocols share to put a search's filters on their wire (issue 47).

Each helper adds the filter's wire name to `honoured` when it expressed it, so the request's
`state["honoured"]` says what reached the wire; the dispatcher reports the rest in `ignoredParams`
and applies domain filters to the hits (`dispatch/filtering.py`). Paging positions are the
protocol's own strings in `SearchPage.next_page`, given back as `request.resume`.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from ..contract.filters import NO_FILTERS, TIME_RANGE_DAYS
from ..contract.query import SearchRequest


def domain_operators(query: str, request: SearchRequest, honoured: set[str]) -> str:
    """`query` with `site:` / `-site:` operators for the domain filters (engines that honour them:
    Google via Serper, Brave, SearXNG's web engines); several include domains are ORed."""
    filters = request.filters
    if filters is NO_FILTERS:
        return query
    parts = [query]
    include = filters.include_domains
    if include:
        sites = [f"site:{d}" for d in include]
        parts.append(sites[0] if len(sites) == 1 else "(" + " OR ".join(sites) + ")")
        honoured.add("includeDomains")
    if filters.exclude_domains:
        parts.extend(f"-site:{d}" for d in filters.exclude_domains)
        honoured.add("excludeDomains")
    return " ".join(parts)


def json_domains(
    request: SearchRequest, body: dict[str, Any], honoured: set[str], *, include: str, exclude: str
) -> None:
    """The domain filters as a JSON search API's host lists (Tavily, Exa), merged with any `site`
    the expert parameters put under `include` already."""
    filters = request.filters
    if filters.include_domains:
        body[include] = [*body.get(include, ()), *filters.include_domains]
        honoured.add("includeDomains")
    if filters.exclude_domains:
        body[exclude] = list(filters.exclude_domains)
        honoured.add("excludeDomains")


def resumed_int(request: SearchRequest, name: str, default: int) -> int:
    """An integer position the previous page wrote (`offset`, `page`), else `default`."""
    resume = request.resume
    value = resume.get(name) if resume is not None else None
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def paging_honoured(request: SearchRequest) -> list[str]:
    """`["page"]` when the request resumes a page this wire wrote (its paging reached the wire), else
    nothing honoured yet."""
    return ["page"] if request.resume is not None else []


def resumed_offset(request: SearchRequest, params: list[tuple[str, str]]) -> int:
    """The `offset` the previous page wrote (0 on the first), added to `params` past the first page."""
    offset = resumed_int(request, "offset", 0)
    if offset:
        params.append(("offset", str(offset)))
    return offset


def resumed_text(request: SearchRequest, name: str) -> str | None:
    """A text position the previous page wrote (an upstream cursor), else None."""
    return request.resume.get(name) if request.resume is not None else None


def time_range_start(request: SearchRequest) -> date | None:
    """The first day `timeRange` reaches back to (needs the dispatcher's `today`), else None."""
    days = TIME_RANGE_DAYS.get(request.filters.time_range or "")
    if not days or request.today is None:
        return None
    return request.today - timedelta(days=days)


def next_offset(offset: int, asked: int, got: int, total: int | None = None) -> dict[str, str] | None:
    """The next page of an offset-paged wire: none when this one came back short or reached `total`."""
    if got <= 0 or got < asked:
        return None
    following = offset + got
    if total is not None and following >= total:
        return None
    return {"offset": str(following)}


def page_count(total: int | None, per_page: int) -> int | None:
    """How many pages of `per_page` hold `total` results (the last page's number on a 1-based wire);
    None when the provider gave no total."""
    return -(-total // per_page) if total is not None else None


def next_number(page: int, got: int, last: int | None = None) -> dict[str, str] | None:
    """The next page of a page-numbered wire: none after an empty page or past `last`."""
    if got <= 0 or (last is not None and page + 1 > last):
        return None
    return {"page": str(page + 1)}


__all__ = [
    "domain_operators",
    "json_domains",
    "next_number",
    "next_offset",
    "page_count",
    "paging_honoured",
    "resumed_int",
    "resumed_offset",
    "resumed_text",
    "time_range_start",
]

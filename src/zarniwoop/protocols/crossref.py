"""Crossref — the registry behind 160M+ DOIs: journal articles, books, chapters, proceedings.

`GET https://api.crossref.org/works?query=…&rows=N&select=…`. No key. A `mailto=` parameter (and
the same address in the User-Agent; setting `contactEmail`) moves the caller from the public pool
to the "polite" one, which is faster and allowed more requests.

Docs: https://api.crossref.org/swagger-ui/index.html and
https://www.crossref.org/documentation/retrieve-metadata/rest-api/access-and-authentication/

    research.endpoint.crossref.protocol: crossref
    research.endpoint.crossref.contactEmail: research@example.org   # polite pool

Quirks:
- The answer is an envelope `{"status": "ok", "message-type": "work-list", "message": {"items": …}}`.
- `title` and `container-title` are lists (usually of one); `author` entries have `given`/`family`
  (or only `name` for organisations).
- Dates are `{"date-parts": [[YYYY, MM, DD]]}` with month and day optional; `issued` is the
  earliest of print and online publication.
- Abstracts, where a publisher deposited one, are JATS XML (`<jats:p>`): tags are stripped.
- `is-referenced-by-count` is Crossref's own citation count (lower than Google Scholar's).
- Limits are advertised per answer (`x-rate-limit-limit`/`-interval`, `x-concurrency-limit`): since
  December 2025 the public pool allows 5 requests/s with one at a time, the polite pool 10/s.
- Validation errors are HTTP 400 `{"status": "failed", "message": [{"message": …}]}`.
"""

from __future__ import annotations

import re
from typing import Any

from ..contract.enums import Modality
from ..contract.errors import ParseError
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import SearchHit
from ._filters import next_offset, paging_honoured, resumed_offset, time_range_start
from ._polite import polite_get
from ._text import as_int, expect, load_json, load_object, obj, strip_html
from ._web import described_hit, error_text, http_url, listed_page, text

DEFAULT_BASE_URL = "https://api.crossref.org"
DOI_URL = "https://doi.org/{doi}"
MAX_ROWS = 100
SELECT = (
    "DOI,URL,title,author,issued,container-title,publisher,type,is-referenced-by-count,abstract,link,subtitle"
)
"""Only the fields read below: a full work record carries its reference list and is ten times larger."""
_JATS = re.compile(r"<(/?)jats:", re.IGNORECASE)
_LEADING_ABSTRACT = re.compile(r"^\s*abstract\b[:.]?\s*", re.IGNORECASE)


class CrossrefProtocol:
    id = "crossref"
    display_name = "Crossref"
    modalities = frozenset({Modality.ACADEMIC})
    key_required = False
    html_in_text = True
    filters = frozenset({"timeRange", "page"})
    """`filter=from-pub-date:` for `timeRange`; pages by `offset`."""
    default_rate_per_second = 5.0
    """The public pool's limit since December 2025 (the polite pool allows 10/s)."""
    prompt_hint = (
        "**Crossref** — the DOI registry: metadata of 160M+ journal articles, books, chapters and "
        "proceedings from every publisher, with authors, venue, year and citation counts; abstracts "
        "only where the publisher deposited one. Best for finding the DOI and publication record of a work."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        params: list[tuple[str, str]] = [
            ("query", request.query),
            ("rows", str(min(request.max_results, MAX_ROWS))),
            ("select", SELECT),
        ]
        filters = []
        expert = request.expert_params
        honoured = paging_honoured(request)
        offset = resumed_offset(request, params)
        since = time_range_start(request)
        if since is not None:
            filters.append(f"from-pub-date:{since.isoformat()}")
            honoured.append("timeRange")
        if expert.get("dateFrom"):
            filters.append(f"from-pub-date:{expert['dateFrom']}")
        if expert.get("dateTo"):
            filters.append(f"until-pub-date:{expert['dateTo']}")
        if filters:
            params.append(("filter", ",".join(filters)))
        return polite_get(
            config, DEFAULT_BASE_URL, "/works", params, "mailto", honoured=honoured, offset=offset
        )

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "crossref")
        message = data.get("message")
        if data.get("status") != "ok" or not isinstance(message, dict):
            reason = _failure(message) or text(data.get("status"))
            if reason:
                return SearchPage(error_message=f"crossref: {reason}")
            raise ParseError("crossref: body is not a Crossref envelope")
        if "items" in message:
            works = expect(message["items"], list, "crossref items")
            total = as_int(message.get("total-results"))
        elif "DOI" in message:  # a single work (`/works/{doi}`)
            works, total = [message], 1
        else:
            raise ParseError("crossref: message has no items")
        return listed_page(
            works,
            _hit,
            request,
            {"dateFrom", "dateTo"},
            total=total,
            next_page=next_offset(
                int(spec.state.get("offset", 0)), min(request.max_results, MAX_ROWS), len(works), total
            ),
        )

    def describe_error(self, raw: RawResponse) -> str | None:
        try:
            data = load_json(raw.body, "crossref")
        except ParseError:
            return None
        return _failure(obj(data).get("message")) or error_text(raw, "message")


def _failure(message: Any) -> str | None:
    """The first reason of a Crossref failure body (`message` is a list of `{type, value, message}`)."""
    if isinstance(message, list) and message:
        return text(obj(message[0]).get("message"))
    return text(message)


def _first(value: Any) -> str | None:
    """The first non-blank string of a Crossref list field (`title`, `container-title`)."""
    if isinstance(value, list):
        return next((t for t in (text(v) for v in value) if t), None)
    return text(value)


def _year(work: dict[str, Any]) -> int | None:
    for key in ("issued", "published", "published-print", "published-online", "created"):
        parts = obj(work.get(key)).get("date-parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
            year = as_int(parts[0][0])
            if year is not None and 0 < year < 10_000:
                return year
    return None


def _authors(value: Any) -> list[str]:
    out = []
    for author in value if isinstance(value, list) else ():
        entry = obj(author)
        name = " ".join(p for p in (text(entry.get("given")), text(entry.get("family"))) if p)
        name = name or text(entry.get("name")) or ""
        if name:
            out.append(name)
    return out


def _abstract(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    cleaned = strip_html(_JATS.sub(r"<\1", value))
    return _LEADING_ABSTRACT.sub("", cleaned) or None


def _pdf(links: Any) -> str | None:
    for link in links if isinstance(links, list) else ():
        entry = obj(link)
        url = http_url(entry.get("URL"))
        if url and entry.get("content-type") == "application/pdf":
            return url
    return None


def _hit(work: dict[str, Any], modality: Modality) -> SearchHit | None:
    title = _first(work.get("title"))
    doi = text(work.get("DOI"))
    url = text(work.get("URL")) or (DOI_URL.format(doi=doi) if doi else None)
    if not title or not url:
        return None
    subtitle = _first(work.get("subtitle"))
    abstract = _abstract(work.get("abstract"))
    extras = {
        "doi": doi,
        "authors": _authors(work.get("author")),
        "year": _year(work),
        "venue": _first(work.get("container-title")),
        "citedByCount": as_int(work.get("is-referenced-by-count")),
        "pdfUrl": _pdf(work.get("link")),
        "publisher": text(work.get("publisher")),
        "type": text(work.get("type")),
    }
    return described_hit(
        f"{title}: {subtitle}" if subtitle else title, url, modality, "crossref", abstract, extras
    )


PROTOCOL = CrossrefProtocol()

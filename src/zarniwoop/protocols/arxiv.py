"""arXiv — open-access preprints in physics, mathematics, computer science and neighbouring fields.

`GET https://export.arxiv.org/api/query?search_query=…&start=0&max_results=N` returns an Atom
feed. No key. arXiv asks clients to leave about three seconds between calls, so the default pace
is one call per three seconds.

Docs: https://info.arxiv.org/help/api/user-manual.html

    research.endpoint.arxiv.protocol: arxiv
    research.endpoint.arxiv.baseUrl: https://export.arxiv.org     # `/api/query` is appended

Quirks:
- The query language has field prefixes (`ti:`, `au:`, `abs:`, `all:` …) and boolean operators.
  Plain words are sent as `all:<word>` joined with AND (a bare multi-word string would be read as
  one `all:` term followed by loose words); a query that already uses the syntax is sent as is.
- Date ranges are a clause `submittedDate:[YYYYMMDDHHMM TO YYYYMMDDHHMM]` inside the query.
- Titles and abstracts carry hard line breaks: whitespace is folded.
- A malformed id list is HTTP 400 whose body is still an Atom feed with one entry titled `Error`:
  read as a soft error (the provider is fine, the request was not).
- Unknown ids are silently left out; no results is a feed with `totalResults` 0 (HTTP 200).
- The XML is parsed with defusedxml: entity declarations and external entities are refused.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..contract.enums import Modality, SearchDomain
from ..contract.errors import ParseError
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import SearchHit
from ._filters import next_offset, paging_honoured, resumed_int, time_range_start
from ._text import as_int, unsupported_note
from ._web import described_hit, endpoint
from ._xml import child, child_text, children, local, parse_xml

if TYPE_CHECKING:
    from datetime import date
    from xml.etree.ElementTree import Element

DEFAULT_BASE_URL = "https://export.arxiv.org"
MAX_RESULTS = 100
"""arXiv allows up to 2000 per call; a search layer never needs more than a page."""

_FIELD_SYNTAX = re.compile(r"\b(ti|au|abs|co|jr|cat|rn|id|all|submittedDate|lastUpdatedDate):", re.IGNORECASE)
_BOOLEAN = re.compile(r"\b(AND|OR|ANDNOT)\b")
_TOKENS = re.compile(r'"[^"]+"|\S+')
_ID = re.compile(r"arxiv\.org/abs/(?P<id>.+?)(?P<version>v\d+)?$")


class ArxivProtocol:
    id = "arxiv"
    display_name = "arXiv"
    modalities = frozenset({Modality.ACADEMIC, Modality.PDF})
    domains = frozenset({SearchDomain.STEM, SearchDomain.ACADEMIC})
    key_required = False
    html_in_text = False
    filters = frozenset({"timeRange", "page"})
    """`submittedDate:[… TO …]` for `timeRange`; pages by `start`."""
    default_rate_per_second = 1 / 3
    soft_error_statuses = frozenset({400})
    """arXiv reports a bad query as HTTP 400 with an Atom error entry: the parser reads it."""
    prompt_hint = (
        "**arXiv** — open-access preprints in physics, mathematics, computer science, statistics, "
        "quantitative biology and finance, with full abstracts and a free PDF for every paper. Best for "
        "recent STEM research before (or without) journal publication; no citation counts, not peer reviewed."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        query = search_query(request.query)
        date_clause = _date_clause(request.expert_params, time_range_start(request), request.today)
        if date_clause:
            query = f"({query}) AND {date_clause}"
        start = resumed_int(request, "offset", 0)
        params = (
            ("search_query", query),
            ("start", str(start)),
            ("max_results", str(min(request.max_results, MAX_RESULTS))),
            ("sortBy", "relevance"),
            ("sortOrder", "descending"),
        )
        honoured = (["timeRange"] if request.filters.time_range and request.today else []) + paging_honoured(
            request
        )
        return RequestSpec(
            method="GET",
            url=endpoint(config, DEFAULT_BASE_URL, "/api/query"),
            params=params,
            headers={"Accept": "application/atom+xml"},
            state={"honoured": honoured, "start": start},
        )

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        feed = parse_xml(raw.body, "arxiv")
        if local(feed.tag) != "feed":
            raise ParseError(f"arxiv: expected an Atom <feed>, got <{local(feed.tag) or '?'}>")
        entries = list(children(feed, "entry"))
        errors = [e for e in entries if _is_error_entry(e)]
        if errors:
            return SearchPage(error_message=f"arxiv: {child_text(errors[0], 'summary') or 'error'}")
        if raw.status >= 400:
            raise ParseError(f"arxiv: HTTP {raw.status} without an error entry")
        hits = tuple(h for h in (_hit(e, request.modality) for e in entries) if h)
        total = as_int(child_text(feed, "totalResults"))
        asked = min(request.max_results, MAX_RESULTS)
        return SearchPage(
            hits=hits[: request.max_results],
            total=total,
            note=unsupported_note(request, _honoured(request)),
            next_page=next_offset(int(spec.state.get("start", 0)), asked, len(entries), total),
        )


def search_query(text: str) -> str:
    """The user's words as an arXiv `search_query`: field syntax kept, plain words ANDed as `all:`."""
    if _FIELD_SYNTAX.search(text) or _BOOLEAN.search(text):
        return text
    tokens = [t for t in _TOKENS.findall(text) if t.strip('"')]
    return " AND ".join(f"all:{t}" for t in tokens) or f"all:{text}"


def _date_clause(expert: Any, since: date | None = None, today: date | None = None) -> str | None:
    start, end = expert.get("dateFrom"), expert.get("dateTo")
    if since is not None:  # `timeRange`: from its first day to today
        start, end = since.isoformat(), end or (today.isoformat() if today else None)
    if not start and not end:
        return None
    # arXiv opened in August 1991; the end bound only has to be later than anything indexed.
    low = (start or "1991-01-01").replace("-", "") + "0000"
    high = (end or "2999-12-31").replace("-", "") + "2359"
    return f"submittedDate:[{low} TO {high}]"


def _honoured(request: SearchRequest) -> set[str]:
    expert = request.expert_params
    honoured = {"dateFrom", "dateTo"}
    if expert.get("filetype", "").lower() == "pdf":
        honoured.add("filetype")  # every arXiv paper has a PDF
    if expert.get("site", "").lower().removeprefix("www.").endswith("arxiv.org"):
        honoured.add("site")  # every hit is on arxiv.org already
    return honoured


def _is_error_entry(entry: Element) -> bool:
    return child_text(entry, "title") == "Error" and "/api/errors" in child_text(entry, "id")


def _hit(entry: Element, modality: Modality) -> SearchHit | None:
    title = child_text(entry, "title")
    abs_url, pdf_url, doi_url = _extract_links(entry)
    url = (pdf_url or abs_url) if modality is Modality.PDF else (abs_url or pdf_url)
    if not title or not url:
        return None
    summary = child_text(entry, "summary")
    published = child_text(entry, "published")
    arxiv_id, version = _extract_identity(entry)
    doi = child_text(entry, "doi") or (doi_url.split("doi.org/", 1)[-1] if doi_url else "")
    primary = child(entry, "primary_category")
    extras: dict[str, Any] = {
        "arxivId": arxiv_id,
        "arxivVersion": version,
        "doi": doi or None,
        "authors": [n for n in (child_text(a, "name") for a in children(entry, "author")) if n],
        "year": as_int(published[:4]) if published[:4].isdigit() else None,
        "venue": child_text(entry, "journal_ref") or None,
        "pdfUrl": pdf_url,
        "publishedAt": published or None,
        "updatedAt": child_text(entry, "updated") or None,
        "primaryCategory": primary.get("term") if primary is not None else None,
        "categories": [c.get("term") for c in children(entry, "category") if c.get("term")],
        "comment": child_text(entry, "comment") or None,
    }
    return described_hit(title, url, modality, "arxiv", summary, extras)


def _extract_links(entry: Element) -> tuple[str | None, str | None, str | None]:
    """The abstract page, PDF and DOI links; the abstract page falls back to the entry's `id` URL."""
    abs_url, pdf_url, doi_url = None, None, None
    for link in children(entry, "link"):
        href = link.get("href")
        if not href:
            continue
        if link.get("rel") == "alternate":
            abs_url = href
        elif link.get("title") == "pdf" or link.get("type") == "application/pdf":
            pdf_url = href
        elif link.get("title") == "doi":
            doi_url = href
    entry_id = child_text(entry, "id")
    return abs_url or (entry_id if entry_id.startswith("http") else None), pdf_url, doi_url


def _extract_identity(entry: Element) -> tuple[str | None, str | None]:
    """`http://arxiv.org/abs/1706.03762v7` → `("1706.03762", "v7")`."""
    match = _ID.search(child_text(entry, "id"))
    return (match.group("id"), match.group("version")) if match else (None, None)


PROTOCOL = ArxivProtocol()

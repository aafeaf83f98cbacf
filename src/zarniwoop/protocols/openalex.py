"""OpenAlex — an open index of 250M+ scholarly works.

`GET https://api.openalex.org/works?search=…&per-page=N`. No key; a `mailto=` parameter
(setting `contactEmail`) puts the caller in the "polite pool" with steadier latency.

Docs: https://docs.openalex.org/api-entities/works/search-works

    research.endpoint.openalex.protocol: openalex
    research.endpoint.openalex.contactEmail: research@example.org

Quirks:
- The abstract is only available as `abstract_inverted_index` (word → positions); it is rebuilt
  by sorting positions, and may be null.
- `doi` is a full `https://doi.org/…` URL; extras carry the bare DOI.
- OpenAlex may return YYYY, YYYY-MM or YYYY-MM-DD dates; `publication_year` is the reliable one.
- Responses carry `RateLimit-Limit/Remaining/Reset` headers, read into the quota.
- A missing work is HTTP 404 with an HTML body: never JSON-decode an error body blindly.
"""

from __future__ import annotations

from typing import Any

from ..contract.enums import Modality
from ..contract.errors import ParseError
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import QuotaStatus, SearchHit
from ._filters import next_number, page_count, resumed_int, time_range_start
from ._polite import contact_param
from ._text import as_int, expect, load_object, obj, text
from ._web import described_hit, endpoint, json_get, listed_page, quota_from_headers

DEFAULT_BASE_URL = "https://api.openalex.org"
MAX_PER_PAGE = 200
_LAST_PAGE = 50
"""Basic paging reaches the first 10,000 results (50 pages of 200; fewer pages of fewer results
still stop there: `page × per-page` ≤ 10,000 — a conservative bound for any page size)."""


class OpenAlexProtocol:
    id = "openalex"
    display_name = "OpenAlex"
    modalities = frozenset({Modality.ACADEMIC})
    known_extras = frozenset({"contactEmail"})
    key_required = False
    html_in_text = False
    filters = frozenset({"timeRange", "language", "page"})
    """`filter=from_publication_date:` for `timeRange`, `filter=language:`, `page` (basic paging)."""
    default_rate_per_second = 10.0
    prompt_hint = (
        "**OpenAlex** — 250M+ scholarly works across all disciplines, with abstracts, authors, venues and "
        "citation counts. Best for finding papers and judging their impact; not full text."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        params: list[tuple[str, str]] = [
            ("search", request.query),
            ("per-page", str(min(request.max_results, MAX_PER_PAGE))),
        ]
        filters = []
        expert = request.expert_params
        honoured: list[str] = []
        page = resumed_int(request, "page", 1)
        if page > 1:
            params.append(("page", str(page)))
            honoured.append("page")
        since = time_range_start(request)
        if since is not None:
            filters.append(f"from_publication_date:{since.isoformat()}")
            honoured.append("timeRange")
        if request.filters.language and "language" not in expert:
            filters.append(f"language:{request.filters.language.lower()[:2]}")
            honoured.append("language")
        if "dateFrom" in expert:
            filters.append(f"from_publication_date:{expert['dateFrom']}")
        if "dateTo" in expert:
            filters.append(f"to_publication_date:{expert['dateTo']}")
        if "language" in expert:
            filters.append(f"language:{expert['language'].lower()[:2]}")
        if expert.get("filetype", "").lower() == "pdf":
            filters.append("has_pdf_url:true")
        if filters:
            params.append(("filter", ",".join(filters)))
        params += contact_param(config, "mailto")
        state: dict[str, Any] = {"honoured": honoured, "page": page} if honoured or page > 1 else {}
        return json_get(endpoint(config, DEFAULT_BASE_URL, "/works"), params, **state)

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "openalex")
        if "error" in data and "results" not in data:
            message = text(data.get("message")) or ""
            return SearchPage(error_message=f"openalex: {data.get('error')}: {message}".strip().rstrip(":"))
        if "results" in data:
            works = expect(data["results"], list, "openalex results")
            total = as_int(obj(data.get("meta")).get("count"))
        elif "id" in data and "title" in data:  # a single work (`/works/{id}`)
            works, total = [data], 1
        else:
            raise ParseError("openalex: body has no results")
        honoured = {"dateFrom", "dateTo", "language"} | (
            {"filetype"} if request.expert_params.get("filetype", "").lower() == "pdf" else set()
        )
        page = int(spec.state.get("page", 1))
        per_page = min(request.max_results, MAX_PER_PAGE)
        last = page_count(total, per_page)
        return listed_page(
            works,
            _hit,
            request,
            honoured,
            total=total,
            quota=_quota(raw),
            next_page=next_number(page, len(works), last=min(last, _LAST_PAGE) if last else _LAST_PAGE),
        )


def rebuild_abstract(index: Any) -> str | None:
    """Text from an inverted index `{word: [positions]}`; None when absent or unusable."""
    if not isinstance(index, dict) or not index:
        return None
    placed: list[tuple[int, str]] = []
    for word, positions in index.items():
        if isinstance(positions, list):
            placed.extend((p, str(word)) for p in positions if isinstance(p, int))
    if not placed:
        return None
    return " ".join(word for _, word in sorted(placed))


def _hit(work: dict[str, Any], modality: Modality) -> SearchHit | None:
    title, url, doi = _extract_identity(work)
    if not title or not url:
        return None
    abstract = rebuild_abstract(work.get("abstract_inverted_index"))
    extras = {
        "doi": doi,
        "authors": _extract_authors(work),
        "year": as_int(work.get("publication_year")),
        "venue": text(obj(obj(work.get("primary_location")).get("source")).get("display_name")),
        "citedByCount": as_int(work.get("cited_by_count")),
        "pdfUrl": _extract_pdf(work),
        "openalexId": text(work.get("id")),
    }
    return described_hit(title, url, modality, "openalex", abstract, extras)


def _extract_identity(work: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """Title; the URL to cite (the DOI, else the landing page, else the OpenAlex id); the bare DOI."""
    title = text(work.get("display_name")) or text(work.get("title"))
    doi_url = text(work.get("doi"))
    landing = text(obj(work.get("primary_location")).get("landing_page_url"))
    url = doi_url or landing or text(work.get("id"))
    return title, url, doi_url.removeprefix("https://doi.org/") if doi_url else None


def _extract_authors(work: dict[str, Any]) -> list[str]:
    authorships = work.get("authorships")
    return [
        name
        for a in (authorships if isinstance(authorships, list) else [])
        if (name := text(obj(obj(a).get("author")).get("display_name")))
    ]


def _extract_pdf(work: dict[str, Any]) -> str | None:
    """The primary location's PDF, else the best open-access location's, else an OA URL ending in .pdf."""
    pdf = text(obj(work.get("primary_location")).get("pdf_url"))
    pdf = pdf or text(obj(work.get("best_oa_location")).get("pdf_url"))
    oa_url = text(obj(work.get("open_access")).get("oa_url"))
    return pdf or (oa_url if oa_url and oa_url.endswith(".pdf") else None)


def _quota(raw: RawResponse) -> QuotaStatus | None:
    """OpenAlex counts a day's calls in `RateLimit-Limit/Remaining`."""
    return quota_from_headers(raw, windows=("day",))


PROTOCOL = OpenAlexProtocol()

"""Open Library — the Internet Archive's open catalogue of books (works, editions, authors).

`GET https://openlibrary.org/search.json?q=…&limit=N&fields=…`. No key; a descriptive User-Agent
is asked for (the transport sends one). One hit per *work*, with its authors, first publication
year, ISBNs and a cover.

Docs: https://openlibrary.org/dev/docs/api/search

    research.endpoint.openlibrary.protocol: openlibrary
    research.endpoint.openlibrary.baseUrl: https://openlibrary.org

Quirks:
- Every doc field is optional (a third of the docs have no cover, some no author, no year).
- `fields=` keeps the payload small and stable: older responses carry bulky `text`/`seed` arrays.
- The total is `numFound` (and the duplicate `num_found`).
- Covers: `https://covers.openlibrary.org/b/id/{cover_i}-M.jpg`; the work page is
  `https://openlibrary.org{key}` (keys are Open Library's own, whatever `baseUrl` a mirror uses).
- Solr syntax works inside `q`, which is how a publication-year range is expressed.
- `language=` takes MARC codes (`eng`, `ger`, `fre`), not ISO 639-1.
"""

from __future__ import annotations

from typing import Any

from ..contract.enums import Modality
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import SearchHit
from ._filters import next_number, page_count, paging_honoured, resumed_int
from ._text import as_int, expect, load_object
from ._web import endpoint, error_text, json_get, listed_page, refusal

DEFAULT_BASE_URL = "https://openlibrary.org"
WORK_URL_BASE = "https://openlibrary.org"
COVER_URL = "https://covers.openlibrary.org/b/id/{cover}-{size}.jpg"
MAX_LIMIT = 100
FIELDS = (
    "key,title,subtitle,author_name,author_key,first_publish_year,isbn,cover_i,"
    "edition_count,has_fulltext,language,publisher"
)
MARC_LANGUAGES = {
    "en": "eng", "de": "ger", "fr": "fre", "es": "spa", "it": "ita", "pt": "por", "nl": "dut",
    "ru": "rus", "ja": "jpn", "zh": "chi", "pl": "pol", "sv": "swe", "da": "dan", "fi": "fin",
    "no": "nor", "cs": "cze", "el": "gre", "tr": "tur", "ko": "kor", "ar": "ara", "he": "heb",
}  # fmt: skip
"""ISO 639-1 → MARC language codes, which Open Library's `language` field uses."""


class OpenLibraryProtocol:
    id = "openlibrary"
    display_name = "Open Library"
    modalities = frozenset({Modality.BOOK})
    key_required = False
    html_in_text = False
    filters = frozenset({"page"})
    """`page` (1-based)."""
    default_rate_per_second = 1.0
    """Open Library throttles bursty anonymous clients with connection resets; one call a second is safe."""
    prompt_hint = (
        "**Open Library** — the Internet Archive's catalogue of 30M+ books: titles, authors, first "
        "publication year, ISBNs and covers. Best for finding books and editions on a topic or by an "
        "author; no article-level content."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        query = request.query
        start, end = request.expert_params.get("dateFrom"), request.expert_params.get("dateTo")
        if start or end:
            low = start[:4] if start else "*"
            high = end[:4] if end else "*"
            query = f"{query} first_publish_year:[{low} TO {high}]"
        params: list[tuple[str, str]] = [
            ("q", query),
            ("limit", str(min(request.max_results, MAX_LIMIT))),
            ("page", str(page := resumed_int(request, "page", 1))),
            ("fields", FIELDS),
        ]
        language = _marc(request.expert_params.get("language"))
        if language:
            params.append(("language", language))
        honoured = paging_honoured(request)
        return json_get(
            endpoint(config, DEFAULT_BASE_URL, "/search.json"), params, honoured=honoured, page=page
        )

    def describe_error(self, raw: RawResponse) -> str | None:
        """Open Library's reason in a non-2xx JSON body (`error`), if it sent one."""
        return error_text(raw, "error", "message")

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "openlibrary")
        if "docs" not in data:
            return refusal(data, "openlibrary", "docs", "error")
        docs = expect(data["docs"], list, "openlibrary docs")
        total = as_int(data.get("numFound", data.get("num_found")))
        honoured = {"dateFrom", "dateTo"} | (
            {"language"} if _marc(request.expert_params.get("language")) else set()
        )
        limit = min(request.max_results, MAX_LIMIT)
        last = page_count(total, limit)
        return listed_page(
            docs,
            _hit,
            request,
            honoured,
            total=total,
            next_page=next_number(int(spec.state.get("page", 1)), len(docs), last=last),
        )


def _marc(language: str | None) -> str | None:
    if not language:
        return None
    code = language.lower().split("-")[0].split("_")[0]
    if len(code) == 3 and code.isalpha():
        return code  # already a MARC code
    return MARC_LANGUAGES.get(code)


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [str(v) for v in value if isinstance(v, str | int) and not isinstance(v, bool) and str(v).strip()]


def _preferred_isbn(isbns: list[str]) -> str | None:
    """An ISBN-13 if there is one (what most catalogues key on), else the first ISBN."""
    return next((i for i in isbns if len(i) == 13), isbns[0] if isbns else None)


def _hit(doc: dict[str, Any], modality: Modality) -> SearchHit | None:
    found = _extract_identity(doc)
    if found is None:
        return None
    title, key = found
    authors = _strings(doc.get("author_name"))
    year = as_int(doc.get("first_publish_year"))
    isbns = _strings(doc.get("isbn"))
    thumbnail, cover = _extract_covers(doc)
    extras: dict[str, Any] = {
        "authors": authors,
        "firstPublishYear": year,
        "isbn": _preferred_isbn(isbns),
        "isbns": isbns[:20],
        "workId": key.rsplit("/", 1)[-1] if key.startswith("/works/") else None,
        "thumbnailUrl": thumbnail,
        "coverUrl": cover,
        "editionCount": as_int(doc.get("edition_count")),
        "hasFulltext": doc.get("has_fulltext") if isinstance(doc.get("has_fulltext"), bool) else None,
        "languages": _strings(doc.get("language"))[:10],
    }
    return SearchHit(
        title=title,
        url=f"{WORK_URL_BASE}{key}",
        modality=modality,
        snippet=_extract_byline(authors, year) or None,
        source="openlibrary",
        extras={k: v for k, v in extras.items() if v not in (None, [])},
    )


def _extract_identity(doc: dict[str, Any]) -> tuple[str, str] | None:
    """`"Title: Subtitle"` and the work's key (`/works/OL…W`), both required."""
    title, key = doc.get("title"), doc.get("key")
    if not isinstance(title, str) or not title.strip() or not isinstance(key, str) or not key.startswith("/"):
        return None
    subtitle = doc.get("subtitle")
    full_title = f"{title}: {subtitle}" if isinstance(subtitle, str) and subtitle else title
    return full_title.strip(), key


def _extract_byline(authors: list[str], year: int | None) -> str:
    """`"by Ann Leckie (2013)"`; more than three authors end in "et al."."""
    byline = ", ".join(authors[:3]) + (" et al." if len(authors) > 3 else "")
    return " ".join(p for p in (f"by {byline}" if byline else "", f"({year})" if year else "") if p)


def _extract_covers(doc: dict[str, Any]) -> tuple[str | None, str | None]:
    """The medium and large cover URLs, or None when there is no cover."""
    cover = as_int(doc.get("cover_i"))
    if cover is None or cover <= 0:  # `-1` means "no cover" in some responses
        return None, None
    return COVER_URL.format(cover=cover, size="M"), COVER_URL.format(cover=cover, size="L")


PROTOCOL = OpenLibraryProtocol()

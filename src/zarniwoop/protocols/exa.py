"""Exa — a neural (embedding-based) web index that returns page text with each hit.

`POST https://api.exa.ai/search` with the key in the `x-api-key` header and a JSON body
`{"query", "numResults", "type": "auto", "category", "includeDomains", "startPublishedDate",
"endPublishedDate", "contents": {"text": {"maxCharacters": N}}}`.

Docs: https://docs.exa.ai/reference/search

    research.endpoint.exa.protocol: exa
    research.endpoint.exa.apiKey: ${env:EXA_API_KEY}         # or the operator's EXA_API_KEY
    research.endpoint.exa.textMaxCharacters: 2000            # page text kept per hit (default 2000)

Modalities map onto Exa's `category`: ACADEMIC → `research paper`, NEWS → `news`, PDF → `pdf`;
WEB searches everything. Expert params: `site` → `includeDomains`, `dateFrom`/`dateTo` →
`startPublishedDate`/`endPublishedDate`, `filetype: pdf` → category `pdf` (WEB/PDF only);
`language` has no Exa equivalent and is named in the note.

Pages: none. `/search` takes `numResults` (at most 100) and no offset, page or cursor, and its
answer (`requestId`, `results`, `costDollars`) names no next page, so there is no way to ask for the
results after the first ones: `page` is not declared and an Exa result carries no `nextPage` (a
larger `maxResults`, up to 100, is the way to more of them).

Quirks:
- Hits carry page text (`text`, up to `maxCharacters`): kept inline (EMBED_TEXT), the snippet is
  its first few sentences. `highlights`/`summary` are used when present instead.
- `author` is often null or "" and, for arXiv pages, junk like "[Submitted on 2 Sep 2025]":
  such values are dropped.
- `image` and `favicon` keys are sometimes absent altogether; `image` can be a site-relative path.
- `costDollars.total` says what the call cost (search + contents, $0.015 for 10 hits with text in
  the recorded bodies); the search contract has no field for it, so it is not passed on.
- `resolvedSearchType` may be an empty string (legacy); it is not used.
"""

from __future__ import annotations

import html
import re
from functools import partial
from typing import Any

from ..contract.enums import ContentInline, Modality
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import ContentRef, SearchHit
from ._filters import json_domains, time_range_start
from ._text import as_int, embedded, expect, load_object, shorten
from ._web import (
    built_hits,
    compact,
    endpoint,
    error_text,
    find_doi,
    honoured_page,
    hostname,
    json_filters,
    json_post,
    key_header,
    pdf_url_for,
    refusal,
    text,
)

DEFAULT_BASE_URL = "https://api.exa.ai"
MAX_RESULTS = 100
SNIPPET_SOURCE_CHARS = 1500
DEFAULT_TEXT_CHARS = 2000
"""Page text kept per hit: enough for an agent to judge a source, small enough to keep answers lean."""

_CATEGORY: dict[Modality, str | None] = {
    Modality.WEB: None,
    Modality.ACADEMIC: "research paper",
    Modality.NEWS: "news",
    Modality.PDF: "pdf",
}


class ExaProtocol:
    id = "exa"
    display_name = "Exa"
    modalities = frozenset(_CATEGORY)
    known_extras = frozenset({"textMaxCharacters"})
    key_required = True
    html_in_text = True
    filters = frozenset({"includeDomains", "excludeDomains", "timeRange"})
    """`includeDomains`, `excludeDomains`, `startPublishedDate` (today minus the range) in the body."""
    env_key = "EXA_API_KEY"
    default_rate_per_second = 5.0
    """Exa's documented default for /search is a handful of requests per second (unverified)."""
    prompt_hint = (
        "**Exa** — a neural web index: finds pages by meaning rather than keywords and returns page "
        'text with each hit. Best for conceptual or descriptive queries ("papers that critique …", '
        '"companies building …"), research papers, news and PDFs; weaker for exact-phrase lookups.'
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        expert = request.expert_params
        honoured: set[str] = set()
        max_chars = as_int(config.extra("textMaxCharacters")) or DEFAULT_TEXT_CHARS
        body: dict[str, Any] = {
            "query": request.query,
            "numResults": min(request.max_results, MAX_RESULTS),
            "type": "auto",
            "contents": {"text": {"maxCharacters": max_chars}},
        }
        category = _CATEGORY[request.modality]
        filetype = expert.get("filetype", "").lower().lstrip(".")
        if filetype == "pdf" and request.modality in (Modality.WEB, Modality.PDF):
            category = "pdf"
            honoured.add("filetype")
        if category:
            body["category"] = category
        json_filters(
            request,
            body,
            honoured,
            sites="includeDomains",
            since="startPublishedDate",
            until="endPublishedDate",
        )
        json_domains(request, body, honoured, include="includeDomains", exclude="excludeDomains")
        since = time_range_start(request)
        if since is not None:
            body["startPublishedDate"] = since.isoformat()
            honoured.add("timeRange")
        return json_post(
            endpoint(config, DEFAULT_BASE_URL, "/search"),
            body,
            key_header(config, "x-api-key"),
            honoured=sorted(honoured),
        )

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "exa")
        if "results" not in data:
            return refusal(data, "exa", "results", "error", "message")
        items = expect(data["results"], list, "exa results")
        return honoured_page(built_hits(items, partial(_hit, modality=request.modality)), request, spec, raw)

    def describe_error(self, raw: RawResponse) -> str | None:
        return error_text(raw, "error", "message", "error.message")


def _extract_author(value: Any) -> str | None:
    """Exa's `author`, unless empty or page furniture such as "[Submitted on 2 Sep 2025]"."""
    name = text(value)
    if not name or name.startswith("[") or name.lower().startswith("submitted"):
        return None
    return name


def _extract_snippet(item: dict[str, Any], body: str | None) -> str | None:
    highlights = item.get("highlights")
    if isinstance(highlights, list):
        first = next((text(h) for h in highlights if text(h)), None)
        if first:
            return shorten(first)
    summary = text(item.get("summary"))
    if summary:
        return shorten(summary)
    # Only the head of the page feeds the snippet: cleaning 10 kB of text per hit would cost ~1 ms each.
    return shorten(plain_text(body[:SNIPPET_SOURCE_CHARS])) if body else None


_MD_IMAGE = re.compile(r"!\[[^\]]*\](\([^)]*\))?")
_MD_LINK = re.compile(r"\[([^\]]*)\](\([^)]*\))?")
_MD_MARKS = re.compile(r"(^|\s)(#{1,6}|[*+-]|\d+\.)\s+")


def plain_text(body: str) -> str:
    """Exa's page text is Markdown-ish (`[Skip to content]`, `![logo]`, `* [Menu]`): made readable."""
    cleaned = _MD_LINK.sub(r"\1", _MD_IMAGE.sub(" ", body))
    cleaned = _MD_MARKS.sub(" ", cleaned)
    return " ".join(html.unescape(cleaned).split())


def _hit(item: dict[str, Any], modality: Modality) -> SearchHit | None:
    url = item.get("url") or item.get("id")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return None
    body = item.get("text") if isinstance(item.get("text"), str) and item["text"].strip() else None
    published = text(item.get("publishedDate"))
    author = _extract_author(item.get("author"))
    image = item.get("image")
    extras: dict[str, Any] = {
        "publishedAt": published,
        "author": author,
        "imageUrl": image if isinstance(image, str) and image.startswith(("http://", "https://")) else None,
        "score": item.get("score") if isinstance(item.get("score"), (int, float)) else None,
        **_extract_vertical(modality, url, published, author),
    }
    return SearchHit(
        title=text(item.get("title")) or url,
        url=url,
        modality=modality,
        snippet=_extract_snippet(item, body),
        source="exa",
        content=_extract_content(modality, url, body),
        extras=compact(extras),
    )


def _extract_vertical(
    modality: Modality, url: str, published: str | None, author: str | None
) -> dict[str, Any]:
    """The modality's own extras (DESIGN §3): an outlet for NEWS; DOI, authors, year, PDF for ACADEMIC."""
    if modality is Modality.NEWS:
        return {"outlet": hostname(url)}
    if modality is Modality.ACADEMIC:
        return {
            "author": None,  # becomes `authors`
            "doi": find_doi(url),
            "authors": [author] if author else [],
            "year": as_int(published[:4]) if published else None,
            "pdfUrl": pdf_url_for(url),
        }
    if modality is Modality.PDF:
        return {"pdfUrl": url}
    return {}


def _extract_content(modality: Modality, url: str, body: str | None) -> ContentRef | None:
    """The page text Exa sent, inline; else, for a PDF, the file itself on demand."""
    if body:
        return embedded(body)
    if modality is Modality.PDF:
        return ContentRef(ContentInline.STASH_ON_DEMAND, ref=url, mime_type="application/pdf")
    return None


PROTOCOL = ExaProtocol()

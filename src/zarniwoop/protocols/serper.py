"""Serper — Google search results (web, images, videos, news, Scholar) as JSON.

`POST https://google.serper.dev/<vertical>` with a JSON body `{"q", "num", "hl", "gl", "tbs"}` and
the key in the `X-API-KEY` header. One path per vertical: `/search` (WEB, and PDF as a web search
with `filetype:pdf`), `/images`, `/videos`, `/news`, `/scholar` (ACADEMIC).

Docs: https://serper.dev (playground; there is no public reference page)

    research.endpoint.serper.protocol: serper
    research.endpoint.serper.apiKey: ${env:SERPER_API_KEY}   # or the operator's SERPER_API_KEY

Expert params: `site` → `site:` operator (`domain`, a subject hint, never is), `filetype` → `filetype:`,
`dateFrom`/`dateTo` → Google's custom date range `tbs=cdr:1,cd_min:M/D/YYYY,cd_max:…` (Scholar:
`as_ylo`/`as_yhi`, whole years), `language` → `hl`; the locale's region → `gl`.

Quirks:
- A body that is a JSON **array** is a batch answer (one object per query sent as an array);
  a single query sent as an object gets one object back. Both are read; the first object counts.
- Fewer `organic` results than `num` can come back (asked 6, got 5).
- Dates are Google's display text ("6 hours ago", "Aug 1, 2023"), passed on as given.
- `peopleAlsoAsk` items may lack a `link`; they are not hits anyway.
- Scholar's `publicationInfo` is "A Author, B Author - Venue, 2017 - host"; authors and venue are
  read from it.
- No rate-limit headers are documented; a `credits` field (cost of the call) may appear.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from ..contract.enums import ContentInline, Modality
from ..contract.errors import ParseError
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import ContentRef, SearchHit
from ._filters import domain_operators, next_number, resumed_int
from ._text import as_int, expect, load_json, shorten, unsupported_note
from ._web import (
    built_hits,
    cited_hit,
    compact,
    endpoint,
    error_text,
    find_doi,
    format_duration,
    identity,
    json_post,
    key_header,
    language,
    pdf_url_for,
    query_with_operators,
    quota_from_headers,
    region,
    text_for,
)

DEFAULT_BASE_URL = "https://google.serper.dev"
MAX_NUM = 100

_VERTICALS: dict[Modality, tuple[str, str]] = {
    Modality.WEB: ("/search", "organic"),
    Modality.PDF: ("/search", "organic"),
    Modality.IMAGE: ("/images", "images"),
    Modality.VIDEO: ("/videos", "videos"),
    Modality.NEWS: ("/news", "news"),
    Modality.ACADEMIC: ("/scholar", "organic"),
}
"""Modality → (path, key of the result list in the answer)."""


class SerperProtocol:
    id = "serper"
    display_name = "Serper (Google)"
    modalities = frozenset(_VERTICALS)
    key_required = True
    html_in_text = False
    filters = frozenset({"includeDomains", "excludeDomains", "timeRange", "language", "region", "page"})
    """`site:`/`-site:` in `q`, `tbs=qdr:d|w|m|y`, `hl`, `gl`, `page`."""
    env_key = "SERPER_API_KEY"
    default_rate_per_second = 5.0
    """Serper states no per-second limit for the free tier; 5/s keeps a burst polite (unverified)."""
    prompt_hint = (
        "**Serper** — Google's results for the open web, images, videos, news and Google Scholar. "
        "Broadest coverage and freshest index; snippets only (no page text). Good first stop for "
        "general questions, current events and finding a specific page; PDF search via `filetype:pdf`."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        path, results_key = _VERTICALS[request.modality]
        forced = "pdf" if request.modality is Modality.PDF else None
        query, honoured = query_with_operators(request, filetype=forced)
        query = domain_operators(query, request, honoured)
        body: dict[str, Any] = {"q": query, "num": min(request.max_results, MAX_NUM)}
        page = resumed_int(request, "page", 1)
        if page > 1:
            body["page"] = page
            honoured.add("page")
        lang, country = language(request), region(request)
        if lang:
            body["hl"] = lang
            honoured.add("language")
        if country:
            body["gl"] = country
            honoured.add("region")
        if request.filters.time_range and request.modality is not Modality.ACADEMIC:
            body["tbs"] = f"qdr:{request.filters.time_range[0]}"  # qdr:d, qdr:w, qdr:m, qdr:y
            honoured.add("timeRange")
        expert = request.expert_params
        notes: list[str] = []
        if request.modality is Modality.ACADEMIC:
            if "dateFrom" in expert:
                body["as_ylo"] = int(expert["dateFrom"][:4])
            if "dateTo" in expert:
                body["as_yhi"] = int(expert["dateTo"][:4])
            if "dateFrom" in expert or "dateTo" in expert:
                notes.append("Google Scholar filters dates by whole years")
        elif "dateFrom" in expert or "dateTo" in expert:
            body["tbs"] = _custom_date_range(expert.get("dateFrom"), expert.get("dateTo"))
        honoured.update(k for k in ("dateFrom", "dateTo") if k in expert)
        auth = key_header(config, "X-API-KEY")
        return json_post(
            endpoint(config, DEFAULT_BASE_URL, path),
            body,
            auth,
            results=results_key,
            honoured=sorted(honoured),
            notes=notes,
            page=page,
        )

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_json(raw.body, "serper")
        if isinstance(data, list):  # batch form: one object per query in the request array
            objects = [item for item in data if isinstance(item, dict)]
            if not objects:
                raise ParseError("serper: batch answer holds no result object")
            data = objects[0]
        data = expect(data, dict, "serper")
        key = str(spec.state.get("results") or _VERTICALS[request.modality][1])
        if key in data:
            items = expect(data[key], list, f"serper {key}")
        elif "searchParameters" in data:
            items = []  # Google found nothing: Serper leaves the list out
        elif isinstance(data.get("message"), str):
            return SearchPage(error_message=f"serper: {data['message']}")
        else:
            raise ParseError(f"serper: body has neither searchParameters nor {key}")
        build = _BUILDERS[request.modality]
        hits = built_hits(items, build)
        notes = [*spec.state.get("notes", ())]
        ignored = unsupported_note(request, set(spec.state.get("honoured", ())))
        if ignored:
            notes.insert(0, ignored)
        return SearchPage(
            hits=hits,
            note="; ".join(notes) or None,
            quota=quota_from_headers(raw),
            next_page=next_number(int(spec.state.get("page", 1)), len(hits)),
        )

    def describe_error(self, raw: RawResponse) -> str | None:
        return error_text(raw, "message", "error")


def _custom_date_range(date_from: str | None, date_to: str | None) -> str:
    """Google's custom date range: `cdr:1,cd_min:1/31/2024,cd_max:12/31/2024` (either end optional)."""
    parts = ["cdr:1"]
    if date_from:
        d = date.fromisoformat(date_from)
        parts.append(f"cd_min:{d.month}/{d.day}/{d.year}")
    if date_to:
        d = date.fromisoformat(date_to)
        parts.append(f"cd_max:{d.month}/{d.day}/{d.year}")
    return ",".join(parts)


def _web_hit(item: dict[str, Any], modality: Modality = Modality.WEB) -> SearchHit | None:
    found = identity(item, "link", text)
    if found is None:
        return None
    title, url = found
    extras = {"position": as_int(item.get("position")), "date": text(item.get("date"))}
    content = None
    if modality is Modality.PDF:
        extras["pdfUrl"] = url
        content = ContentRef(ContentInline.STASH_ON_DEMAND, ref=url, mime_type="application/pdf")
    return SearchHit(
        title=title,
        url=url,
        modality=modality,
        snippet=text(item.get("snippet")),
        source="serper",
        content=content,
        extras=compact(extras),
    )


def _pdf_hit(item: dict[str, Any]) -> SearchHit | None:
    return _web_hit(item, Modality.PDF)


def _image_hit(item: dict[str, Any]) -> SearchHit | None:
    image = item.get("imageUrl")
    page = item.get("link") or image  # an image without a page links to itself
    title = text(item.get("title"))
    if not title or not isinstance(page, str) or not page:
        return None
    extras = {
        **_extract_image(item),
        "site": text(item.get("source")) or text(item.get("domain")),
        "position": as_int(item.get("position")),
    }
    return SearchHit(
        title=title,
        url=page,
        modality=Modality.IMAGE,
        snippet=text(item.get("source")),
        source="serper",
        extras=compact(extras),
    )


def _video_hit(item: dict[str, Any]) -> SearchHit | None:
    extras = {
        "duration": format_duration(item.get("duration")),
        "channel": text(item.get("channel")),
        "thumbnailUrl": item.get("imageUrl"),
        "publishedAt": text(item.get("date")),
        "platform": text(item.get("source")),
        "position": as_int(item.get("position")),
    }
    return cited_hit(item, "link", Modality.VIDEO, "serper", text(item.get("snippet")), extras, text)


def _news_hit(item: dict[str, Any]) -> SearchHit | None:
    extras = {
        "publishedAt": text(item.get("date")),
        "outlet": text(item.get("source")),
        "thumbnailUrl": item.get("imageUrl"),
        "position": as_int(item.get("position")),
    }
    return cited_hit(item, "link", Modality.NEWS, "serper", text(item.get("snippet")), extras, text)


def _scholar_hit(item: dict[str, Any]) -> SearchHit | None:
    found = identity(item, "link", text)
    if found is None:
        return None
    title, url = found
    info = text(item.get("publicationInfo"))
    authors, venue = _extract_publication(info)
    snippet = text(item.get("snippet"))
    extras = {
        "doi": find_doi(url, snippet, info),
        "authors": authors,
        "year": as_int(item.get("year")),
        "venue": venue,
        "citedByCount": as_int(item.get("citedBy")),
        "pdfUrl": _extract_pdf(item, url),
        "publicationInfo": info,
    }
    return SearchHit(
        title=title,
        url=url,
        modality=Modality.ACADEMIC,
        snippet=shorten(snippet),
        source="serper",
        extras=compact(extras),
    )


def _extract_image(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "imageUrl": item.get("imageUrl"),
        "thumbnailUrl": item.get("thumbnailUrl"),
        "width": as_int(item.get("imageWidth")),
        "height": as_int(item.get("imageHeight")),
    }


def _extract_pdf(item: dict[str, Any], url: str) -> str | None:
    pdf = item.get("pdfUrl") or item.get("pdfLink") or pdf_url_for(url)
    return pdf if isinstance(pdf, str) else None


def _extract_publication(info: str | None) -> tuple[list[str], str | None]:
    """`"A Vaswani, N Shazeer… - Advances in neural…, 2017 - neurips.cc"` → (authors, venue)."""
    if not info:
        return [], None
    parts = [p.strip() for p in info.split(" - ")]
    authors = [a.strip(" …") for a in parts[0].split(",") if a.strip(" …")] if len(parts) > 1 else []
    venue = None
    if len(parts) > 2:
        venue_part = parts[1].rsplit(",", 1)
        candidate = venue_part[0] if len(venue_part) == 2 and venue_part[1].strip().isdigit() else parts[1]
        venue = candidate.strip(" …") or None
        if venue and venue.isdigit():
            venue = None
    return authors, venue


_BUILDERS = {
    Modality.WEB: _web_hit,
    Modality.PDF: _pdf_hit,
    Modality.IMAGE: _image_hit,
    Modality.VIDEO: _video_hit,
    Modality.NEWS: _news_hit,
    Modality.ACADEMIC: _scholar_hit,
}

PROTOCOL = SerperProtocol()
text = text_for(PROTOCOL)

"""Brave Search API — an independent web index (web, images, videos, news).

`GET https://api.search.brave.com/res/v1/{web,images,videos,news}/search?q=…&count=N` with the key
in the `X-Subscription-Token` header and `Accept: application/json`.

Docs: https://api-dashboard.search.brave.com/app/documentation/web-search/get-started

    research.endpoint.brave.protocol: brave
    research.endpoint.brave.apiKey: ${env:BRAVE_API_KEY}     # or the operator's BRAVE_API_KEY
    research.endpoint.brave.rateLimit.perSecond: 1           # the default: the free plan's 1 query/s

Expert params: `site` → `site:` operator, `filetype` → `filetype:` operator, `dateFrom`/
`dateTo` → `freshness=YYYY-MM-DDtoYYYY-MM-DD` (web, videos, news; image search has no date
filter), `language` → `search_lang`; the locale's region → `country`.
Filters: domains → `site:`/`-site:`, `timeRange` → `freshness=pd|pw|pm|py`, `safeSearch` →
`safesearch`, `region` → `country`; pages → `offset` 1, 2, … (a page index, at most 9).

Quirks:
- `description` carries `<strong>` highlight tags and HTML entities: stripped to plain text.
- `age`/`page_age` are absent on some results; `page_age` (ISO) is preferred as `publishedAt`.
- Web results sit in `web.results`; the other verticals answer with a top-level `results`. A web
  answer without any result omits `web`.
- Rate-limit headers carry one value per window, `X-RateLimit-Limit: 1, 15000` = per second,
  per month; the monthly one becomes the quota (`source: provider`).
- Counts are capped per vertical (web 20, news/videos 50, images 100).
"""

from __future__ import annotations

from typing import Any

from ..contract.enums import Modality
from ..contract.errors import ParseError
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import SearchHit
from ._filters import domain_operators, next_number, resumed_int
from ._text import as_int, expect, load_json, load_object, obj, unsupported_note
from ._web import (
    built_hits,
    cited_hit,
    endpoint,
    format_duration,
    hostname,
    json_get,
    key_header,
    language,
    query_with_operators,
    quota_from_headers,
    region,
    text,
)

DEFAULT_BASE_URL = "https://api.search.brave.com"

_VERTICALS: dict[Modality, tuple[str, int]] = {
    Modality.WEB: ("/res/v1/web/search", 20),
    Modality.IMAGE: ("/res/v1/images/search", 100),
    Modality.VIDEO: ("/res/v1/videos/search", 50),
    Modality.NEWS: ("/res/v1/news/search", 50),
}
"""Modality → (path, largest `count` the vertical accepts)."""

_DATED = frozenset({Modality.WEB, Modality.VIDEO, Modality.NEWS})
"""Verticals that accept `freshness`."""
_SAFE = frozenset({Modality.WEB, Modality.IMAGE, Modality.VIDEO, Modality.NEWS})
"""Verticals that accept `safesearch` (images: `off` or `strict` only, so `moderate` is `strict`)."""
_FRESHNESS = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}
_LAST_OFFSET = 9
"""Brave's `offset` is a page index of at most 9."""


class BraveProtocol:
    id = "brave"
    display_name = "Brave Search"
    modalities = frozenset(_VERTICALS)
    key_required = True
    html_in_text = True
    env_key = "BRAVE_API_KEY"
    filters = frozenset(
        {"includeDomains", "excludeDomains", "timeRange", "safeSearch", "language", "region", "page"}
    )
    """`site:`/`-site:` in `q`, `freshness` pd/pw/pm/py, `safesearch`, `search_lang`, `country`, `offset`."""
    default_rate_per_second = 1.0
    """The free plan allows 1 query per second (third-party docs; DESIGN §5's example)."""
    prompt_hint = (
        "**Brave Search** — an independent web index (not Google/Bing) for web pages, images, videos "
        "and news. Good second opinion on general web questions and recent news; snippets only."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        path, cap = _VERTICALS[request.modality]
        query, honoured = query_with_operators(request)
        query = domain_operators(query, request, honoured)
        params: list[tuple[str, str]] = [("q", query), ("count", str(min(request.max_results, cap)))]
        page = resumed_int(request, "page", 0)
        if page:
            params.append(("offset", str(page)))  # in pages of `count`, not results
            honoured.add("page")
        lang, country = language(request), region(request)
        if lang:
            params.append(("search_lang", lang))
            honoured.add("language")
        if country:
            params.append(("country", country))
            honoured.add("region")
        filters = request.filters
        if filters.safe_search and request.modality in _SAFE:
            level = filters.safe_search
            params.append(
                (
                    "safesearch",
                    level if request.modality is not Modality.IMAGE or level != "moderate" else "strict",
                )
            )
            honoured.add("safeSearch")
        if filters.time_range and request.modality in _DATED:
            params.append(("freshness", _FRESHNESS[filters.time_range]))
            honoured.add("timeRange")
        expert = request.expert_params
        end = expert.get("dateTo") or (request.today.isoformat() if request.today else None)
        dated = "dateFrom" in expert or "dateTo" in expert
        if request.modality in _DATED and end and dated and not request.filters.time_range:
            start = expert.get("dateFrom") or "1970-01-01"
            params.append(("freshness", f"{start}to{end}"))  # both ends: an open range ends today
            honoured.update(k for k in ("dateFrom", "dateTo") if k in expert)
        auth = key_header(config, "X-Subscription-Token")
        return json_get(
            endpoint(config, DEFAULT_BASE_URL, path), params, auth, honoured=sorted(honoured), page=page
        )

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "brave")
        if data.get("type") == "ErrorResponse":
            return SearchPage(error_message=f"brave: {_error_detail(data)}")
        if request.modality is Modality.WEB:
            if "web" in data:
                web = expect(data["web"], dict, "brave web")
                items = expect(web.get("results", []), list, "brave web.results")
            elif data.get("type") == "search" or "query" in data:
                items = []  # no web results: Brave leaves the block out
            else:
                raise ParseError("brave: body has neither web nor query")
        elif "results" in data:
            items = expect(data["results"], list, "brave results")
        else:
            raise ParseError("brave: body has no results")
        build = _BUILDERS[request.modality]
        hits = built_hits(items, build)
        notes = [unsupported_note(request, set(spec.state.get("honoured", ())))]
        altered = (data.get("query") or {}).get("altered") if isinstance(data.get("query"), dict) else None
        if isinstance(altered, str) and altered:
            notes.append(f"results for the corrected query {altered!r}")
        more = obj(data.get("query")).get("more_results_available")
        page = int(spec.state.get("page", 0))
        following = next_number(page, len(hits), last=_LAST_OFFSET) if more is not False else None
        return SearchPage(
            hits=hits,
            note="; ".join(n for n in notes if n) or None,
            quota=quota_from_headers(raw, windows=("second", "month")),
            next_page=following,
        )

    def describe_error(self, raw: RawResponse) -> str | None:
        try:
            data = load_json(raw.body, "brave")
        except ParseError:
            return None
        return _error_detail(data) if isinstance(data, dict) and "error" in data else None


def _error_detail(data: dict[str, Any]) -> str:
    error = data.get("error")
    if isinstance(error, dict):
        detail = error.get("detail") or error.get("code") or "error"
        return str(detail)
    return str(error or "error")


def _web_hit(item: dict[str, Any]) -> SearchHit | None:
    extras = {
        "publishedAt": _extract_published(item),
        "siteName": text(obj(item.get("profile")).get("name")),
        "thumbnailUrl": _extract_thumbnail(item),
        "language": text(item.get("language")),
    }
    return cited_hit(item, "url", Modality.WEB, "brave", text(item.get("description")), extras)


def _image_hit(item: dict[str, Any]) -> SearchHit | None:
    extras = {**_extract_image(item), "site": text(item.get("source"))}
    return cited_hit(item, "url", Modality.IMAGE, "brave", text(item.get("source")), extras)


def _video_hit(item: dict[str, Any]) -> SearchHit | None:
    video = obj(item.get("video"))
    extras = {
        "duration": format_duration(video.get("duration")),
        "channel": text(video.get("creator")) or text(obj(video.get("author")).get("name")),
        "thumbnailUrl": _extract_thumbnail(item),
        "publishedAt": _extract_published(item),
        "platform": text(video.get("publisher")),
        "views": as_int(video.get("views")),
    }
    return cited_hit(item, "url", Modality.VIDEO, "brave", text(item.get("description")), extras)


def _news_hit(item: dict[str, Any]) -> SearchHit | None:
    extras = {
        "publishedAt": _extract_published(item),
        "outlet": _extract_outlet(item),
        "thumbnailUrl": _extract_thumbnail(item),
        "breaking": item.get("breaking") if isinstance(item.get("breaking"), bool) else None,
    }
    return cited_hit(item, "url", Modality.NEWS, "brave", text(item.get("description")), extras)


def _extract_published(item: dict[str, Any]) -> str | None:
    return text(item.get("page_age")) or text(item.get("age"))


def _extract_thumbnail(item: dict[str, Any]) -> str | None:
    thumb = item.get("thumbnail")
    return thumb.get("src") if isinstance(thumb, dict) and isinstance(thumb.get("src"), str) else None


def _extract_image(item: dict[str, Any]) -> dict[str, Any]:
    """The full image's URL and size (`properties`), the thumbnail's size where those are missing."""
    props, thumb = obj(item.get("properties")), obj(item.get("thumbnail"))
    return {
        "imageUrl": props.get("url"),
        "thumbnailUrl": thumb.get("src"),
        "width": as_int(props.get("width")) or as_int(thumb.get("width")),
        "height": as_int(props.get("height")) or as_int(thumb.get("height")),
    }


def _extract_outlet(item: dict[str, Any]) -> str | None:
    """The publisher's profile name, else the source, else the host of `meta_url`, else of the URL."""
    meta_host = obj(item.get("meta_url")).get("hostname")
    return (
        text(obj(item.get("profile")).get("name"))
        or text(item.get("source"))
        or hostname(f"https://{meta_host}" if isinstance(meta_host, str) else None)
        or hostname(item.get("url"))
    )


_BUILDERS = {
    Modality.WEB: _web_hit,
    Modality.IMAGE: _image_hit,
    Modality.VIDEO: _video_hit,
    Modality.NEWS: _news_hit,
}

PROTOCOL = BraveProtocol()

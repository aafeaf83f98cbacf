"""SearXNG — a self-hosted metasearch engine that merges the results of many engines.

`GET {baseUrl}/search?q=…&format=json&categories=…` on an instance you run. No key; `baseUrl` is
required (a missing one is a config error at start-up). JSON output must be enabled in the
instance's `settings.yml` (`search.formats: [html, json]`), else it answers 403 with an HTML page.

Docs: https://docs.searxng.org/dev/search_api.html

    research.endpoint.searxng.protocol: searxng
    research.endpoint.searxng.baseUrl: https://searx.example.org
    research.endpoint.searxng.engines: google,bing,duckduckgo   # optional: restrict the engines

Modalities map onto SearXNG categories: WEB → `general`, IMAGE → `images`, VIDEO → `videos`,
NEWS → `news`, ACADEMIC → `science`. Expert params: `site` → `site:` and `filetype` →
`filetype:` in the query (passed on to the engines; the big web engines honour them), `language`
→ `language`, `dateFrom` → the smallest `time_range` (day, week, month, year) that covers it —
widened, so the note says so. `dateTo` in the past cannot be expressed and is named in the note.
Filters: `includeDomains`/`excludeDomains` → `site:`/`-site:` in `q`, `timeRange` → `time_range`,
`safeSearch` → `safesearch` 0/1/2, `region` → `language=de-DE`; pages → `pageno` 1, 2, 3, ….

Quirks (see the shared WIRE_NOTES):
- No page-size parameter: about 20–30 results per page come back; the instance trims to maxResults.
- The same URL from several engines is one result; `engines` names them all (a set, so unordered).
- `unresponsive_engines` is a list of `[engine, reason]` pairs; they go into the note. If every
  engine failed, the status is still 200 with no results: reported as a soft error (no cooldown).
- `number_of_results` was dropped upstream in 2026 and was often 0 anyway: not used.
- A `content` of exactly "None" is an artefact of `json_engine` engines with a null field: dropped.
- Errors: 400 `{"error": "No query"}`, 400 for a bad `pageno`, 403 HTML when JSON is disabled.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from ..contract.enums import Modality
from ..contract.errors import ConfigError
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import SearchHit
from ._filters import domain_operators, next_number, resumed_int
from ._text import as_int, expect, load_object, shorten, unsupported_note
from ._web import (
    built_hits,
    compact,
    error_text,
    find_doi,
    format_duration,
    hostname,
    json_get,
    language,
    pdf_url_for,
    query_with_operators,
    refusal,
    text,
)

_CATEGORY = {
    Modality.WEB: "general",
    Modality.IMAGE: "images",
    Modality.VIDEO: "videos",
    Modality.NEWS: "news",
    Modality.ACADEMIC: "science",
}
_TIME_RANGES = (("day", 1), ("week", 7), ("month", 31), ("year", 366))
"""SearXNG's `time_range` values and how many days back each reaches."""
_SAFE_SEARCH = {"off": "0", "moderate": "1", "strict": "2"}
"""`safeSearch` → SearXNG's `safesearch` levels."""
_RESOLUTION = re.compile(r"^\s*(\d+)\s*[x×X]\s*(\d+)\s*$")
JSON_DISABLED = (
    "JSON output is not enabled on this SearXNG instance; add `json` to `search.formats` in its "
    "settings.yml and restart it"
)


class SearxngProtocol:
    id = "searxng"
    display_name = "SearXNG"
    modalities = frozenset(_CATEGORY)
    known_extras = frozenset({"engines"})
    filters = frozenset(
        {"includeDomains", "excludeDomains", "timeRange", "safeSearch", "language", "region", "page"}
    )
    """`site:`/`-site:` in `q`, `time_range`, `safesearch`, `language` (`de-DE` with a region), `pageno`."""
    key_required = False
    html_in_text = True
    default_rate_per_second = None
    """Your own instance: no pacing unless `.rateLimit.perSecond` is set (its operator knows what its
    upstream engines tolerate; a pace here made `research_rich` over one instance ×4 slower)."""
    prompt_hint = (
        "**SearXNG** — a self-hosted metasearch engine that merges results from many engines "
        "(Google, Bing, DuckDuckGo, Wikipedia, arXiv, …) without tracking or per-query cost. Good for "
        "broad web, image, video, news and science searches; result quality depends on the engines "
        "the instance enables."
    )

    def validate_config(self, config: InstanceConfig) -> None:
        key = f"research.endpoint.{config.instance_id}.baseUrl"
        if not config.base_url:
            raise ConfigError(
                key,
                "is required for the searxng protocol: the URL of your SearXNG instance, e.g. "
                "https://searx.example.org",
            )
        if not config.base_url.startswith(("http://", "https://")):
            raise ConfigError(key, f"must be an http(s) URL, got {config.base_url!r}")

    def probe_request(self, config: InstanceConfig) -> RequestSpec:
        """SearXNG's own health check: no search, no upstream engines woken."""
        self.validate_config(config)
        assert config.base_url is not None
        return RequestSpec("GET", config.base_url.rstrip("/") + "/healthz", step="probe")

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        self.validate_config(config)
        assert config.base_url is not None
        query, honoured = query_with_operators(request)
        query = domain_operators(query, request, honoured)
        pageno = resumed_int(request, "page", 1)
        params: list[tuple[str, str]] = [
            ("q", query),
            ("format", "json"),
            ("categories", _CATEGORY[request.modality]),
            ("pageno", str(pageno)),
        ]
        if request.resume is not None:
            honoured.add("page")
        lang = language(request)
        if lang:
            country = request.filters.region
            params.append(("language", f"{lang}-{country}" if country else lang))
            honoured.update(("language", "region") if country else ("language",))
        if request.filters.safe_search:
            params.append(("safesearch", _SAFE_SEARCH[request.filters.safe_search]))
            honoured.add("safeSearch")
        if request.filters.time_range:
            params.append(("time_range", request.filters.time_range))
            honoured.add("timeRange")
        engines = config.extra("engines")
        if engines:
            params.append(("engines", engines))
        notes: list[str] = []
        expert = request.expert_params
        today = request.today  # from the dispatcher's clock; without it, dates stay unhonoured
        if "dateFrom" in expert and today is not None:
            days = (today - date.fromisoformat(expert["dateFrom"])).days
            chosen = next((name for name, reach in _TIME_RANGES if days <= reach), None)
            if chosen:
                params.append(("time_range", chosen))
                honoured.add("dateFrom")
                notes.append(f"dateFrom widened to time_range={chosen}")
        if "dateTo" in expert and today is not None and date.fromisoformat(expert["dateTo"]) >= today:
            honoured.add("dateTo")  # an end date of today or later restricts nothing
        return json_get(
            f"{config.base_url.rstrip('/')}/search",
            params,
            honoured=sorted(honoured),
            notes=notes,
            pageno=pageno,
        )

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "searxng")
        if "results" not in data:
            return refusal(data, "searxng", "results", "error")
        items = expect(data["results"], list, "searxng results")
        hits = built_hits(items, _BUILDERS[request.modality])
        failed = _unresponsive(data.get("unresponsive_engines"))
        notes = [unsupported_note(request, set(spec.state.get("honoured", ()))), *spec.state.get("notes", ())]
        if failed:
            notes.append(f"unresponsive engines: {failed}")
        listed = data.get("corrections")  # a list of strings; anything else (`true`, a dict) says nothing
        corrections = [c for c in listed if isinstance(c, str) and c] if isinstance(listed, list) else []
        if corrections and not hits:
            notes.append(f"did you mean: {corrections[0]}")
        error = f"searxng: no results; engines that failed: {failed}" if failed and not hits else None
        return SearchPage(
            hits=hits,
            note="; ".join(n for n in notes if n) or None,
            error_message=error,
            next_page=next_number(int(spec.state.get("pageno", 1)), len(hits)),
        )

    def describe_error(self, raw: RawResponse) -> str | None:
        message = error_text(raw, "error")
        if message:
            return message
        if raw.status == 403 and raw.body.lstrip()[:1] == b"<":
            return JSON_DISABLED
        return None


def _unresponsive(value: Any) -> str:
    """`[["silent upstream", "timeout"], …]` → `silent upstream (timeout), …`."""
    if not isinstance(value, list):
        return ""
    pairs = []
    for entry in value:
        if isinstance(entry, list) and entry and isinstance(entry[0], str):
            reason = entry[1] if len(entry) > 1 and isinstance(entry[1], str) else "failed"
            pairs.append(f"{entry[0]} ({reason})")
    return ", ".join(pairs)


def _web_hit(item: dict[str, Any], modality: Modality = Modality.WEB) -> SearchHit | None:
    found = _extract_identity(item)
    if found is None:
        return None
    title, url = found
    extras = {
        **_extract_ranking(item),
        "publishedAt": _extract_published(item),
        "thumbnailUrl": text(item.get("thumbnail")),
    }
    if modality is Modality.NEWS:
        extras["outlet"] = text(item.get("source")) or hostname(url)
    return _searxng_hit(item, title, url, modality, extras)


def _news_hit(item: dict[str, Any]) -> SearchHit | None:
    return _web_hit(item, Modality.NEWS)


def _image_hit(item: dict[str, Any]) -> SearchHit | None:
    found = _extract_identity(item)
    if found is not None:
        (title, url), extras = found, _extract_ranking(item)
    else:  # an image without a page: the image is the page
        image = item.get("img_src")
        if not isinstance(image, str) or not image.startswith(("http://", "https://")):
            return None
        (title, url), extras = (text(item.get("title")) or image, image), {}
    return _searxng_hit(item, title, url, Modality.IMAGE, {**extras, **_extract_image(item)})


def _video_hit(item: dict[str, Any]) -> SearchHit | None:
    found = _extract_identity(item)
    if found is None:
        return None
    extras = {
        **_extract_ranking(item),
        "duration": format_duration(item.get("length")),
        "channel": text(item.get("author")),
        "thumbnailUrl": text(item.get("thumbnail")),
        "publishedAt": _extract_published(item),
        "embedUrl": text(item.get("iframe_src")),
        "views": as_int(item.get("views")),
    }
    return _searxng_hit(item, *found, Modality.VIDEO, extras)


def _paper_hit(item: dict[str, Any]) -> SearchHit | None:
    found = _extract_identity(item)
    if found is None:
        return None
    extras = {**_extract_ranking(item), **_extract_paper(item, found[1])}
    return _searxng_hit(item, *found, Modality.ACADEMIC, extras)


def _searxng_hit(
    item: dict[str, Any], title: str, url: str, modality: Modality, extras: dict[str, Any]
) -> SearchHit:
    return SearchHit(
        title=title,
        url=url,
        modality=modality,
        snippet=shorten(_extract_snippet(item)),
        source="searxng",
        extras=compact(extras),
    )


def _extract_identity(item: dict[str, Any]) -> tuple[str, str] | None:
    """The result's http(s) URL (required) and its title (else the URL)."""
    url = item.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return None
    return text(item.get("title")) or url, url


def _extract_ranking(item: dict[str, Any]) -> dict[str, Any]:
    """Which engines found the result and the score SearXNG merged from their ranks."""
    engines = item.get("engines")
    return {
        "engines": sorted(e for e in engines if isinstance(e, str)) if isinstance(engines, list) else None,
        "score": item.get("score") if isinstance(item.get("score"), (int, float)) else None,
    }


def _extract_snippet(item: dict[str, Any]) -> str | None:
    """The snippet source: the head of `content` (some engines put whole pages there)."""
    content = item.get("content")
    value = text(content[:2000]) if isinstance(content, str) else None
    return None if value == "None" else value


def _extract_published(item: dict[str, Any]) -> str | None:
    return text(item.get("publishedDate")) or text(item.get("pubdate"))


def _extract_image(item: dict[str, Any]) -> dict[str, Any]:
    """The image, its thumbnail, and `"1920 x 1080"` resolutions read as width and height."""
    width = height = None
    match = _RESOLUTION.match(str(item.get("resolution") or ""))
    if match:
        width, height = int(match.group(1)), int(match.group(2))
    return {
        "imageUrl": text(item.get("img_src")),
        "thumbnailUrl": text(item.get("thumbnail_src")) or text(item.get("thumbnail")),
        "width": width,
        "height": height,
        "format": text(item.get("img_format")),
        "site": text(item.get("source")),
    }


def _extract_paper(item: dict[str, Any], url: str) -> dict[str, Any]:
    """The ACADEMIC extras (DESIGN §3); DOI and PDF fall back to what the URL reveals."""
    published = _extract_published(item)
    authors, pdf, doi = item.get("authors"), item.get("pdf_url"), item.get("doi")
    return {
        "doi": doi if isinstance(doi, str) and doi else find_doi(url),
        "authors": [a for a in authors if isinstance(a, str) and a] if isinstance(authors, list) else [],
        "year": as_int(published[:4]) if published else None,
        "venue": text(item.get("journal")) or text(item.get("publisher")),
        "pdfUrl": pdf if isinstance(pdf, str) and pdf else pdf_url_for(url),
        "publishedAt": published,
    }


_BUILDERS = {
    Modality.WEB: _web_hit,
    Modality.NEWS: _news_hit,
    Modality.IMAGE: _image_hit,
    Modality.VIDEO: _video_hit,
    Modality.ACADEMIC: _paper_hit,
}

PROTOCOL = SearxngProtocol()

"""Tavily — a search API built for LLM agents (RAG): ranked results with a relevance score.

`POST https://api.tavily.com/search` with `Authorization: Bearer tvly-…` and a JSON body
`{"query", "max_results", "topic": "general"|"news", "search_depth": "basic", "include_domains",
"start_date", "end_date"}`. Older clients sent the key as `api_key` in the body; the bearer header
is the current form.

Docs: https://docs.tavily.com/documentation/api-reference/endpoint/search

    research.endpoint.tavily.protocol: tavily
    research.endpoint.tavily.apiKey: ${env:TAVILY_API_KEY}   # or the operator's TAVILY_API_KEY
    research.endpoint.tavily.searchDepth: basic               # `advanced` costs two credits a call

Modalities: WEB (`topic: general`) and NEWS (`topic: news`, results carry `published_date`).
Expert params: `site` → `include_domains`, `dateFrom`/`dateTo` → `start_date`/`end_date`;
`filetype` and `language` have no Tavily equivalent and are named in the note.

Pages: none. `/search` takes `max_results` (at most 20) and no offset, page or cursor, and its
answer names no next page, so there is no way to ask for the results after the first ones: `page`
is not declared and a Tavily result carries no `nextPage`.

Quirks:
- `content` is a short extract chosen for the query (the snippet); `raw_content` (the page) is null
  unless asked for — when present it is kept inline as the hit's content.
- `images` are plain URLs or `{url, description}` objects; they are not hits of a WEB search.
- `answer` and `follow_up_questions` are null unless asked for; not used.
- Error bodies look like `{"detail": {"error": "…"}}`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ..contract.enums import Modality
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import ContentRef, SearchHit
from ._filters import json_domains
from ._text import embedded, expect, load_object, shorten
from ._web import (
    built_hits,
    compact,
    endpoint,
    error_text,
    honoured_page,
    hostname,
    json_filters,
    json_post,
    key_header,
    refusal,
    text_for,
)

DEFAULT_BASE_URL = "https://api.tavily.com"
MAX_RESULTS = 20
_TOPIC = {Modality.WEB: "general", Modality.NEWS: "news"}


class TavilyProtocol:
    id = "tavily"
    display_name = "Tavily"
    modalities = frozenset(_TOPIC)
    known_extras = frozenset({"searchDepth"})
    key_required = True
    html_in_text = False
    filters = frozenset({"includeDomains", "excludeDomains", "timeRange"})
    """`include_domains`, `exclude_domains`, `time_range` in the JSON body."""
    env_key = "TAVILY_API_KEY"
    default_rate_per_second = 1.5
    """About 100 requests a minute for development keys (unverified)."""
    prompt_hint = (
        "**Tavily** — a search API made for agents: a handful of relevance-scored results with "
        "query-focused extracts. Good for factual web questions and recent news where a few solid "
        "sources beat a long list."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        honoured: set[str] = set()
        body: dict[str, Any] = {
            "query": request.query,
            "max_results": min(request.max_results, MAX_RESULTS),
            "topic": _TOPIC[request.modality],
            "search_depth": config.extra("searchDepth") or "basic",
        }
        json_filters(request, body, honoured, sites="include_domains", since="start_date", until="end_date")
        json_domains(request, body, honoured, include="include_domains", exclude="exclude_domains")
        if request.filters.time_range:
            body["time_range"] = request.filters.time_range  # day, week, month, year: Tavily's own words
            honoured.add("timeRange")
        auth = key_header(config, "Authorization", "Bearer ")
        return json_post(endpoint(config, DEFAULT_BASE_URL, "/search"), body, auth, honoured=sorted(honoured))

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "tavily")
        if "results" not in data:
            return refusal(data, "tavily", "results", "detail.error", "detail", "error")
        items = expect(data["results"], list, "tavily results")
        return honoured_page(built_hits(items, partial(_hit, modality=request.modality)), request, spec, raw)

    def describe_error(self, raw: RawResponse) -> str | None:
        return error_text(raw, "detail.error", "detail", "error", "message")


def _hit(item: dict[str, Any], modality: Modality) -> SearchHit | None:
    url = item.get("url")
    if not isinstance(url, str) or not url:
        return None
    extras: dict[str, Any] = {
        "score": item.get("score") if isinstance(item.get("score"), (int, float)) else None,
        "publishedAt": text(item.get("published_date")),
        "outlet": hostname(url) if modality is Modality.NEWS else None,
    }
    return SearchHit(
        title=text(item.get("title")) or url,
        url=url,
        modality=modality,
        snippet=shorten(text(item.get("content"))),
        source="tavily",
        content=_extract_page(item),
        extras=compact(extras),
    )


def _extract_page(item: dict[str, Any]) -> ContentRef | None:
    """The whole page as text, sent when the request asked for `include_raw_content`."""
    raw_content = item.get("raw_content")
    return embedded(raw_content) if isinstance(raw_content, str) and raw_content.strip() else None


PROTOCOL = TavilyProtocol()
text = text_for(PROTOCOL)

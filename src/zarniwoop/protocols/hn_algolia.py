"""Hacker News through Algolia's HN Search API — tech news and the discussions around it.

Registered as protocol id `hackernews`. `GET https://hn.algolia.com/api/v1/search` ranks by
relevance (then points, then comments); `/search_by_date` lists the newest first. NEWS uses the
newest-first endpoint, WEB the relevance one (endpoint extra `sort: relevance|date` overrides).
Only stories are searched (`tags=story`); comments are noise for a search layer. No key.

Docs: https://hn.algolia.com/api

    research.endpoint.hackernews.protocol: hackernews
    research.endpoint.hackernews.baseUrl: https://hn.algolia.com
    research.endpoint.hackernews.sort: relevance         # optional, NEWS newest-first otherwise

Quirks:
- `url` is null — or the empty string in older answers — for Ask HN and other text posts: the
  discussion page `https://news.ycombinator.com/item?id={objectID}` stands in.
- `story_text` is HTML (`<p>`, entities) or null or "".
- Date ranges are `numericFilters=created_at_i>=…,created_at_i<=…` (epoch seconds, UTC).
- Results are capped at about 1000 per query; an often quoted limit is 10,000 requests/hour per IP.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlsplit

from ..contract.enums import Modality, SearchDomain
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import SearchHit
from ._filters import next_number, paging_honoured, resumed_int, time_range_start
from ._text import as_int, embedded, expect, load_object, shorten, strip_html, text
from ._web import endpoint, error_text, json_get, listed_page, refusal

DEFAULT_BASE_URL = "https://hn.algolia.com"
DISCUSSION_URL = "https://news.ycombinator.com/item?id={id}"
MAX_HITS_PER_PAGE = 100


class HackerNewsProtocol:
    id = "hackernews"
    display_name = "Hacker News (Algolia)"
    modalities = frozenset({Modality.NEWS, Modality.WEB})
    known_extras = frozenset({"sort"})
    domains = frozenset({SearchDomain.TECH, SearchDomain.NEWS})
    key_required = False
    html_in_text = True
    filters = frozenset({"timeRange", "page"})
    """`numericFilters=created_at_i>=…` for `timeRange`; `page` (0-based)."""
    default_rate_per_second = 2.0
    """10,000 requests/hour per IP ≈ 2.8/s; stay under it."""
    prompt_hint = (
        "**Hacker News** — tech news, launches (Show HN), questions (Ask HN) and the community "
        "discussion around them, with points and comment counts. Best for software, startups and what "
        "engineers are talking about; not authoritative, not general news."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        sort = (config.extra("sort") or "").lower()
        by_date = sort == "date" or (sort != "relevance" and request.modality is Modality.NEWS)
        params: list[tuple[str, str]] = [
            ("query", request.query),
            ("tags", "story"),
            ("hitsPerPage", str(min(request.max_results, MAX_HITS_PER_PAGE))),
            ("page", str(page := resumed_int(request, "page", 0))),
        ]
        filters = _date_filters(request.expert_params)
        honoured = paging_honoured(request)
        since = time_range_start(request)
        if since is not None:
            filters.append(f"created_at_i>={int(datetime.combine(since, time.min, UTC).timestamp())}")
            honoured.append("timeRange")
        if filters:
            params.append(("numericFilters", ",".join(filters)))
        return json_get(
            endpoint(config, DEFAULT_BASE_URL, f"/api/v1/{'search_by_date' if by_date else 'search'}"),
            params,
            honoured=honoured,
            page=page,
        )

    def describe_error(self, raw: RawResponse) -> str | None:
        """Algolia's reason in a non-2xx body: `{"message": …, "status": 400}`."""
        return error_text(raw, "message")

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "hackernews")
        if "hits" not in data:  # Algolia's error shape: {"message", "status"}
            return refusal(data, "hackernews", "hits", "message")
        found = expect(data["hits"], list, "hackernews hits")
        return listed_page(
            found,
            _hit,
            request,
            {"dateFrom", "dateTo"},
            total=as_int(data.get("nbHits")),
            next_page=next_number(int(spec.state.get("page", 0)), len(found), last=_last_page(data)),
        )


def _date_filters(expert: Any) -> list[str]:
    out = []
    if expert.get("dateFrom"):
        start = datetime.combine(date.fromisoformat(expert["dateFrom"]), time.min, UTC)
        out.append(f"created_at_i>={int(start.timestamp())}")
    if expert.get("dateTo"):
        # dateTo is inclusive: everything before the next midnight (UTC).
        end = datetime.combine(date.fromisoformat(expert["dateTo"]) + timedelta(days=1), time.min, UTC)
        out.append(f"created_at_i<{int(end.timestamp())}")
    return out


def _hit(item: dict[str, Any], modality: Modality) -> SearchHit | None:
    hn_id = _extract_id(item)
    title = text(item.get("title")) or text(item.get("story_title"))
    if hn_id is None or not title:
        return None
    discussion = DISCUSSION_URL.format(id=hn_id)
    link = _extract_link(item.get("url")) or _extract_link(item.get("story_url"))
    body = strip_html(text(item.get("story_text")) or text(item.get("comment_text")))
    points, comments = as_int(item.get("points")), as_int(item.get("num_comments"))
    author = text(item.get("author"))
    extras: dict[str, Any] = {
        "publishedAt": text(item.get("created_at")),
        "outlet": _extract_outlet(link),
        "points": points,
        "numComments": comments,
        "author": author,
        "discussionUrl": discussion,
        "hnId": hn_id,
    }
    return SearchHit(
        title=strip_html(title),
        url=link or discussion,
        modality=modality,
        snippet=shorten(body) or _extract_stats(points, comments, author) or None,
        source="hackernews",
        content=embedded(body),
        extras={k: v for k, v in extras.items() if v is not None},
    )


def _extract_id(item: dict[str, Any]) -> str | None:
    object_id = item.get("objectID")
    if not isinstance(object_id, str | int) or isinstance(object_id, bool) or not str(object_id).strip():
        return None
    return str(object_id)


def _extract_link(value: Any) -> str | None:
    """An http(s) URL with a host, else None (Algolia echoes whatever the submitter typed)."""
    url = text(value)
    if not url:
        return None
    try:
        split = urlsplit(url.strip())
    except ValueError:  # e.g. an unbalanced IPv6 bracket
        return None
    return url.strip() if split.scheme in ("http", "https") and split.hostname else None


def _extract_outlet(url: str | None) -> str:
    host = urlsplit(url).hostname if url else None
    return (host or "").removeprefix("www.") or "Hacker News"


def _extract_stats(points: int | None, comments: int | None, author: str | None) -> str:
    """`"42 points · 7 comments · by pg"`: the snippet of a story without text."""
    parts = (
        f"{points} points" if points is not None else "",
        f"{comments} comments" if comments is not None else "",
        f"by {author}" if author else "",
    )
    return " · ".join(p for p in parts if p)


PROTOCOL = HackerNewsProtocol()


def _last_page(data: dict[str, Any]) -> int | None:
    """Algolia's last page index (`nbPages` − 1; it serves at most 1,000 hits in all)."""
    pages = as_int(data.get("nbPages"))
    return pages - 1 if pages is not None else None

"""PeerTube — videos of the federated PeerTube network, through its search API.

`GET https://sepiasearch.org/api/v1/search/videos?search=…&start=0&count=N`. SepiaSearch (run by
Framasoft) indexes the videos of hundreds of PeerTube instances behind the same API every
instance serves for its own videos, so `baseUrl` may name either. No key.

Docs: https://docs.joinpeertube.org/api-rest-reference.html#tag/Search/operation/searchVideos

    research.endpoint.peertube.protocol: peertube
    research.endpoint.peertube.baseUrl: https://sepiasearch.org        # or one instance: https://framatube.org
    research.endpoint.peertube.sort: -publishedAt                      # optional, relevance (`-match`) otherwise

Quirks:
- SepiaSearch items carry absolute `url`, `embedUrl`, `thumbnailUrl`; an instance's own items only
  relative `embedPath`/`thumbnailPath`, resolved against the video's host (its `url`, else the
  channel's or account's `host`, else `baseUrl`).
- `duration` is whole seconds; `category`, `licence` and `language` are `{id, label}` objects
  (`language.id` a string such as "en").
- `originallyPublishedAt` is null or the epoch (`1970-01-01…`) when unknown: `publishedAt` is used.
- `description` is Markdown, already truncated by the server.
- Default per-IP limit 50 calls per 10 s on `/api/v1/*` (an admin may change it; framatube sends
  `X-RateLimit-*` headers, SepiaSearch none); over it → HTTP 429. Errors are
  `application/problem+json` with `detail`/`title`.
"""

from __future__ import annotations

from functools import partial
from typing import Any
from urllib.parse import urljoin

from ..contract.enums import Modality
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import SearchHit
from ._filters import next_offset, paging_honoured, resumed_int, time_range_start
from ._text import as_int, expect, load_object, obj
from ._web import (
    described_hit,
    error_text,
    format_duration,
    hostname,
    http_url,
    json_get,
    listed_page,
    refusal,
    split_url,
    text_for,
)

DEFAULT_BASE_URL = "https://sepiasearch.org"
MAX_COUNT = 100
ERROR_KEYS = ("detail", "error", "title")
"""PeerTube's problem+json (`detail`, `title`) or its older `{"error": …}`."""
"""PeerTube's `count` maximum."""


class PeerTubeProtocol:
    id = "peertube"
    display_name = "PeerTube (SepiaSearch)"
    modalities = frozenset({Modality.VIDEO})
    key_required = False
    html_in_text = False
    filters = frozenset({"timeRange", "page"})
    """`startDate` for `timeRange`; pages by `start`."""
    default_rate_per_second = 2.0
    """PeerTube's default limit is 50 calls per 10 s per IP; 2/s leaves room for an admin's stricter one."""
    prompt_hint = (
        "**PeerTube** — videos from the federated, ad-free PeerTube network (talks, tutorials, free "
        "software, activism, education), with duration, channel and an embeddable player. Not YouTube: "
        "smaller catalogue, no mainstream entertainment."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        base = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
        params: list[tuple[str, str]] = [
            ("search", request.query),
            ("start", str(start := resumed_int(request, "offset", 0))),
            ("count", str(min(request.max_results, MAX_COUNT))),
            ("sort", config.extra("sort") or "-match"),
            ("nsfw", "false"),
        ]
        expert = request.expert_params
        honoured = paging_honoured(request)
        since = time_range_start(request)
        if since is not None:
            params.append(("startDate", f"{since.isoformat()}T00:00:00Z"))
            honoured.append("timeRange")
        if expert.get("dateFrom"):
            params.append(("startDate", f"{expert['dateFrom']}T00:00:00Z"))
        if expert.get("dateTo"):
            params.append(("endDate", f"{expert['dateTo']}T23:59:59Z"))
        if expert.get("language"):
            params.append(("languageOneOf", expert["language"].lower().replace("_", "-").split("-")[0]))
        return json_get(f"{base}/api/v1/search/videos", params, base=base, honoured=honoured, start=start)

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "peertube")
        if "data" not in data:
            return refusal(data, "peertube", "data", *ERROR_KEYS)
        videos = expect(data["data"], list, "peertube data")
        base = str(spec.state.get("base") or DEFAULT_BASE_URL)
        return listed_page(
            videos,
            partial(_hit, base=base),
            request,
            {"dateFrom", "dateTo", "language"},
            total=as_int(data.get("total")),
            next_page=next_offset(
                int(spec.state.get("start", 0)),
                min(request.max_results, MAX_COUNT),
                len(videos),
                as_int(data.get("total")),
            ),
        )

    def describe_error(self, raw: RawResponse) -> str | None:
        return error_text(raw, *ERROR_KEYS)


def _origin(video: dict[str, Any], base: str) -> str:
    """Where the video's relative paths live: its page's host, else its channel's or account's."""
    parts = split_url(video.get("url"))
    if parts is not None and parts.scheme in ("http", "https") and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    for owner in ("channel", "account"):
        host = text(obj(video.get(owner)).get("host"))
        if host and "/" not in host:
            return f"https://{host}"
    return base


def _absolute(video: dict[str, Any], url_key: str, path_key: str, origin: str) -> str | None:
    url = http_url(video.get(url_key))
    if url:
        return url
    path = text(video.get(path_key))
    return urljoin(origin + "/", path.lstrip("/")) if path else None


def _hit(video: dict[str, Any], base: str, modality: Modality) -> SearchHit | None:
    title = text(video.get("name"))
    origin = _origin(video, base)
    uuid = text(video.get("uuid")) or text(video.get("shortUUID"))
    url = http_url(video.get("url")) or (f"{origin}/videos/watch/{uuid}" if uuid else None)
    if not title or not url:
        return None
    channel, account = obj(video.get("channel")), obj(video.get("account"))
    description = text(video.get("truncatedDescription")) or text(video.get("description"))
    duration = as_int(video.get("duration"))
    extras = {
        "duration": format_duration(duration) if duration is not None else None,
        "durationSeconds": duration,
        "channel": text(channel.get("displayName")) or text(channel.get("name")),
        "channelUrl": text(channel.get("url")),
        "account": text(account.get("displayName")) or text(account.get("name")),
        "thumbnailUrl": _absolute(video, "thumbnailUrl", "thumbnailPath", origin),
        "previewUrl": _absolute(video, "previewUrl", "previewPath", origin),
        "embedUrl": _absolute(video, "embedUrl", "embedPath", origin),
        "publishedAt": text(video.get("publishedAt")),
        "views": as_int(video.get("views")),
        "likes": as_int(video.get("likes")),
        "language": text(obj(video.get("language")).get("id")),
        "license": text(obj(video.get("licence")).get("label")),
        "category": text(obj(video.get("category")).get("label")),
        "tags": [t for t in video.get("tags") or () if isinstance(t, str)]
        if isinstance(video.get("tags"), list)
        else None,
        "isLive": video.get("isLive") if isinstance(video.get("isLive"), bool) else None,
        "host": hostname(url),
    }
    return described_hit(title, url, modality, "peertube", description, extras, "text/markdown")


PROTOCOL = PeerTubeProtocol()
text = text_for(PROTOCOL)

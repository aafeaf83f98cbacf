"""PeerTube: SepiaSearch's absolute URLs, an instance's relative paths, problem+json errors."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import InstanceConfig, RawResponse, SearchRequest
from zarniwoop.protocols.peertube import PROTOCOL

from ..support.fuzz_academic import survives_broken_json
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

SEPIA = ("peertube", "sepiasearch-search-videos-kde-start12-count12.json")
FRAMATUBE = ("peertube", "framatube-search-videos-fsf-start0-count12.json")


def parse(body: bytes, base: str | None = None, **kw):
    return parse_body(
        PROTOCOL, InstanceConfig("peertube", "peertube", base_url=base), "kde", "video", body, **kw
    )


def test_build_request_with_dates_and_language():
    request = SearchRequest.create(
        "kdenlive",
        "video",
        max_results=12,
        expert_params={"dateFrom": "2023-01-01", "dateTo": "2023-12-31", "language": "en-GB"},
    )
    spec = PROTOCOL.build_request(request, InstanceConfig("peertube", "peertube"))
    assert spec.url == "https://sepiasearch.org/api/v1/search/videos"
    assert dict(spec.params) == {
        "search": "kdenlive",
        "start": "0",
        "count": "12",
        "sort": "-match",
        "nsfw": "false",
        "startDate": "2023-01-01T00:00:00Z",
        "endDate": "2023-12-31T23:59:59Z",
        "languageOneOf": "en",
    }


def test_sepiasearch_videos_have_duration_channel_thumbnail_and_embed():
    page = parse(fixture_bytes(*SEPIA))
    assert page.total == 1860
    first = page.hits[0]
    assert (
        first.title == "Akademy 2023 Interview: Kdenlive contributors Jean-Baptiste Mardelle and Eugen Mohr"
    )
    assert first.url == "https://tube.kockatoo.org/videos/watch/06540e6b-a23d-4a68-ad73-79a16820e72f"
    assert first.extras["duration"] == "38:15"
    assert first.extras["durationSeconds"] == 2295
    assert first.extras["channel"] == "Akademy"
    assert first.extras["thumbnailUrl"] == (
        "https://tube.kockatoo.org/lazy-static/thumbnails/6fe26b11-711f-4726-a591-07396a4d34d0.jpg"
    )
    assert first.extras["embedUrl"] == "https://tube.kockatoo.org/videos/embed/1MjNtoPo7Dvk5FC1RNE5xH"
    assert first.extras["publishedAt"] == "2023-06-23T10:58:24.063Z"
    assert first.extras["license"] == "Attribution - Share Alike"
    assert first.snippet.startswith("[Kdenlive](https://kdenlive.org) contributors")


def test_instance_items_with_relative_paths_are_resolved_on_the_video_host():
    page = parse(fixture_bytes(*FRAMATUBE), base="https://sepiasearch.org")
    assert page.total == 164
    first = page.hits[0]
    assert first.title == "02.02 La formalisation du logiciel Libre : RMS, FSF / GNU"
    assert first.url == "https://framatube.org/videos/watch/9cb99a6e-b1e2-4636-8a22-f746c0244227"
    assert first.extras["embedUrl"] == "https://framatube.org/videos/embed/kmtJJ4jnGmKD6v9JV99Wf4"
    assert first.extras["thumbnailUrl"] == (
        "https://framatube.org/lazy-static/thumbnails/cf80ddc5-82ca-4343-8ed3-f06a12117bb4.jpg"
    )
    assert first.extras["language"] == "fr"
    assert first.extras["channel"] == "Mooc Comprendre l'Open Source"


def test_a_video_without_url_gets_its_watch_page_on_the_base():
    body = json.dumps({"total": 1, "data": [{"name": "Talk", "uuid": "abc", "embedPath": "/videos/embed/x"}]})
    [hit] = parse(body.encode(), base="https://tube.example").hits
    assert hit.url == "https://tube.example/videos/watch/abc"
    assert hit.extras["embedUrl"] == "https://tube.example/videos/embed/x"


def test_problem_json_errors():
    body = b'{"type": "about:blank", "title": "Bad Request", "detail": "Incorrect request parameters: count", "status": 400}'
    assert parse(body).error_message == "peertube: Incorrect request parameters: count"
    assert PROTOCOL.describe_error(RawResponse(400, {}, body)) == "Incorrect request parameters: count"


@settings(deadline=None)
@given(data=st.data())
def test_broken_bodies_raise_only_parse_error(data):
    survives_broken_json(parse, data, fixture_bytes(*FRAMATUBE))

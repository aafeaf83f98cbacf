"""Brave: the recorded web body, synthetic image/video/news bodies, requests, quota headers, junk."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarniwoop.contract import Modality, SearchRequest
from zarniwoop.contract.errors import ParseError
from zarniwoop.contract.protocol import InstanceConfig, RawResponse, Secret
from zarniwoop.protocols.brave import PROTOCOL

from ..support.fuzz import encoded, garbles, json_like, parse_or_parse_error, truncations
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body
from ..support.providers_web import synthetic_bytes

CONFIG = InstanceConfig("brave", "brave", api_key=Secret("BSA-secret-0001"))
TODAY = date(2025, 9, 30)
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
BRAVE_KEYS = [
    "type",
    "query",
    "altered",
    "web",
    "results",
    "title",
    "url",
    "description",
    "page_age",
    "age",
    "profile",
    "name",
    "thumbnail",
    "src",
    "properties",
    "width",
    "height",
    "video",
    "duration",
    "creator",
    "meta_url",
    "hostname",
    "error",
    "detail",
]
RECORDED = ("brave", "web-search-what-is-semantic-kernel.json")


def parse(body: bytes, modality: str = "web", headers: dict[str, str] | None = None, **kw):
    return parse_body(PROTOCOL, CONFIG, "q", modality, body, headers=headers, **kw)


def test_recorded_web_body():
    page = parse(fixture_bytes(*RECORDED))
    assert len(page.hits) == 10
    first = page.hits[0]
    assert first.title == "Introduction to Semantic Kernel | Microsoft Learn"
    assert first.url == "https://learn.microsoft.com/en-us/semantic-kernel/overview/"
    # <strong> tags and &#x27; entities are gone
    assert first.snippet.startswith("Semantic Kernel combines prompts with existing APIs to perform actions.")
    assert "model's request" in first.snippet and "<strong>" not in first.snippet
    assert first.extras["siteName"] == "Microsoft" and first.extras["language"] == "en"
    assert first.extras["thumbnailUrl"].startswith("https://imgs.search.brave.com/KxEtqQiadL")
    assert "publishedAt" not in first.extras  # age/page_age are null on this result
    assert page.hits[1].extras["publishedAt"] == "2024-07-25T00:00:00"
    assert page.hits[6].url == "https://www.youtube.com/watch?v=OLdeHYobcDI"
    assert [h.extras["siteName"] for h in page.hits[2:5]] == ["Medium", "Analytics Vidhya", "GitHub"]
    assert page.note is None and page.quota is None


def test_images_from_synthetic_body():
    page = parse(synthetic_bytes("brave", "images-synthetic.json"), "image")
    first, second = page.hits
    assert first.url == "https://photos.example.org/aurora-tromso"
    assert first.extras == {
        "imageUrl": "https://images.example.org/aurora-tromso.jpg",
        "thumbnailUrl": "https://imgs.search.brave.com/thumb-aurora-1.jpg",
        "width": 1920,
        "height": 1080,
        "site": "photos.example.org",
    }
    assert "width" not in second.extras  # Brave gives sizes for most images, not all


def test_videos_from_synthetic_body():
    page = parse(synthetic_bytes("brave", "videos-synthetic.json"), "video")
    first, second = page.hits
    assert first.snippet == "A quick tour of Semantic Kernel plugins."
    assert first.extras["duration"] == "10:42" and first.extras["channel"] == "Example Dev Channel"
    assert first.extras["thumbnailUrl"] == "https://imgs.search.brave.com/vid-1.jpg"
    assert first.extras["views"] == 12345 and first.extras["publishedAt"] == "2025-03-03T12:00:00"
    assert second.extras["channel"] == "Example Conference"  # from video.author when no creator


def test_news_from_synthetic_body():
    page = parse(synthetic_bytes("brave", "news-synthetic.json"), "news")
    first, second = page.hits
    assert first.extras["outlet"] == "reuters.example.com"
    assert first.extras["publishedAt"] == "2025-08-13T06:00:00"
    assert second.extras["publishedAt"] == "1 day ago" and second.extras["breaking"] is True


def test_monthly_quota_from_rate_limit_headers():
    headers = {
        "X-RateLimit-Limit": "1, 15000",
        "X-RateLimit-Remaining": "0, 1000",
        "X-RateLimit-Reset": "1, 86400",
        "Date": "Wed, 13 Aug 2025 10:00:00 GMT",
    }
    quota = parse(fixture_bytes(*RECORDED), headers=headers).quota
    assert (quota.used, quota.limit, quota.remaining) == (14000, 15000, 1000)
    assert quota.period == "month" and quota.source == "provider"
    assert quota.resets_at == "2025-08-14T10:00:00Z"


def test_error_response_in_a_200_is_a_soft_error_and_missing_web_is_empty():
    page = parse(b'{"type": "ErrorResponse", "error": {"detail": "Rate limit exceeded", "status": 429}}')
    assert page.error_message == "brave: Rate limit exceeded"
    empty = parse(b'{"type": "search", "query": {"original": "zzzz"}}')
    assert empty.hits == () and empty.error_message is None


def test_corrected_query_is_noted():
    page = parse(
        b'{"type": "search", "query": {"original": "semntic", "altered": "semantic"}, "web": {"results": []}}'
    )
    assert page.note == "results for the corrected query 'semantic'"


def test_build_request_web():
    spec = PROTOCOL.build_request(
        SearchRequest.create("What is Semantic Kernel", "web", max_results=50), CONFIG
    )
    assert (spec.method, spec.url) == ("GET", "https://api.search.brave.com/res/v1/web/search")
    assert spec.headers == {"Accept": "application/json", "X-Subscription-Token": "BSA-secret-0001"}
    assert spec.params == (("q", "What is Semantic Kernel"), ("count", "20"))  # web caps at 20
    assert spec.json_body is None


def test_build_request_verticals_and_expert_params():
    request = SearchRequest.create(
        "apple",
        "news",
        max_results=30,
        locale="en-GB",
        expert_params={
            "site": "reuters.com",
            "dateFrom": "2025-08-01",
            "dateTo": "2025-08-13",
            "filetype": "pdf",
        },
    )
    spec = PROTOCOL.build_request(request, CONFIG)
    assert spec.url == "https://api.search.brave.com/res/v1/news/search"
    assert dict(spec.params) == {
        "q": "apple site:reuters.com filetype:pdf",
        "count": "30",
        "search_lang": "en",
        "country": "gb",
        "freshness": "2025-08-01to2025-08-13",
    }
    page = PROTOCOL.parse_response(RawResponse(200, {}, b'{"type": "news", "results": []}'), spec, request)
    assert page.note is None


def test_open_ended_date_range_and_images_without_dates():
    request = SearchRequest.create("aurora", "web", expert_params={"dateFrom": "2025-01-01"})
    assert (
        dict(PROTOCOL.build_request(request.on(TODAY), CONFIG).params)["freshness"]
        == "2025-01-01to2025-09-30"
    )
    images = SearchRequest.create("aurora", "image", expert_params={"dateTo": "2024-12-31", "language": "de"})
    spec = PROTOCOL.build_request(images, CONFIG)
    assert spec.url.endswith("/res/v1/images/search") and "freshness" not in dict(spec.params)
    page = PROTOCOL.parse_response(RawResponse(200, {}, b'{"type": "images", "results": []}'), spec, images)
    assert page.note == "ignored by this provider: dateTo"


def test_without_today_an_open_range_is_left_out_and_noted():
    request = SearchRequest.create("aurora", "web", expert_params={"dateFrom": "2025-01-01"})
    spec = PROTOCOL.build_request(request, CONFIG)
    assert "freshness" not in dict(spec.params)
    page = PROTOCOL.parse_response(RawResponse(200, {}, b'{"type": "search", "query": {}}'), spec, request)
    assert page.note == "ignored by this provider: dateFrom"


def test_describe_error():
    raw = RawResponse(
        401,
        {},
        b'{"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid."}}',
    )
    assert PROTOCOL.describe_error(raw) == "The provided subscription token is invalid."
    assert PROTOCOL.describe_error(RawResponse(502, {}, b"Bad Gateway")) is None


def test_metadata():
    assert PROTOCOL.default_rate_per_second == 1.0 and PROTOCOL.env_key == "BRAVE_API_KEY"
    assert {m.value for m in PROTOCOL.modalities} == {"WEB", "IMAGE", "VIDEO", "NEWS"}


def test_truncated_body_is_a_parse_error():
    with pytest.raises(ParseError):
        parse(fixture_bytes(*RECORDED)[:-3])


@FUZZ
@given(st.binary(max_size=400))
def test_any_bytes_parse_or_raise_parse_error(body):
    parse_or_parse_error(PROTOCOL, body, Modality.WEB)
    parse_or_parse_error(PROTOCOL, body, Modality.VIDEO)


@FUZZ
@given(st.data())
def test_truncated_and_garbled_recorded_body(data):
    body = fixture_bytes(*RECORDED)
    parse_or_parse_error(PROTOCOL, data.draw(truncations(body)), Modality.WEB)
    parse_or_parse_error(PROTOCOL, data.draw(garbles(body)), Modality.WEB)


@FUZZ
@given(json_like(BRAVE_KEYS), st.sampled_from(sorted(PROTOCOL.modalities)))
def test_wrong_shapes_raise_only_parse_error(value, modality):
    parse_or_parse_error(PROTOCOL, encoded(value), modality)


@FUZZ
@given(st.binary(max_size=200))
def test_describe_error_never_raises(body):
    detail = PROTOCOL.describe_error(RawResponse(401, {}, body))
    assert detail is None or isinstance(detail, str)

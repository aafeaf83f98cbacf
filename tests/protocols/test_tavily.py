"""Tavily: the recorded body, the request body (bearer key, topic, dates, domains), and junk."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarniwoop.contract import ContentInline, Modality, SearchRequest
from zarniwoop.contract.errors import ParseError
from zarniwoop.contract.protocol import InstanceConfig, RawResponse, Secret
from zarniwoop.protocols.tavily import PROTOCOL

from ..support.fuzz import encoded, garbles, json_like, parse_or_parse_error, truncations
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

CONFIG = InstanceConfig("tavily", "tavily", api_key=Secret("tvly-secret-0001"))
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
TAVILY_KEYS = [
    "query",
    "answer",
    "images",
    "results",
    "title",
    "url",
    "content",
    "score",
    "raw_content",
    "published_date",
    "detail",
    "error",
    "response_time",
]
RECORDED = ("tavily", "search-with-answer-and-images-semantic-kernel.json")


def parse(body: bytes, modality: str = "web", **kw):
    return parse_body(PROTOCOL, CONFIG, "q", modality, body, **kw)


def test_recorded_body():
    page = parse(fixture_bytes(*RECORDED))
    assert [h.title for h in page.hits] == [
        "Semantic Kernel overview for .NET - .NET | Microsoft Learn",
        "Introduction to Semantic Kernel | Microsoft Learn",
        "GitHub - microsoft/semantic-kernel: Integrate cutting-edge LLM ...",
        "How to quickly start with Semantic Kernel | Microsoft Learn",
    ]  # the images are not hits
    first = page.hits[0]
    assert first.url == "https://learn.microsoft.com/en-us/dotnet/ai/semantic-kernel-dotnet-overview"
    assert first.snippet.startswith(
        "Semantic Kernel is an open-source SDK that integrates and orchestrates AI models"
    )
    assert first.extras == {"score": 0.94989765}
    # raw_content was sent in this body: kept inline as the page text
    assert first.content.inline is ContentInline.EMBED_TEXT and len(first.content.text) == 9785
    assert first.content.text.startswith("Semantic Kernel overview for .NET - .NET | Microsoft Learn")
    assert page.hits[3].extras["score"] == 0.59344494
    assert page.note is None


def test_news_extras():
    body = (
        b'{"query": "q", "results": [{"title": "Apple plans robots", "url": "https://www.bloomberg.com/news/a",'
        b' "content": "Apple is plotting", "score": 0.8, "published_date": "Wed, 13 Aug 2025 18:21:12 GMT"}]}'
    )
    hit = parse(body, "news").hits[0]
    assert hit.modality is Modality.NEWS and hit.content is None
    assert hit.extras == {
        "score": 0.8,
        "publishedAt": "Wed, 13 Aug 2025 18:21:12 GMT",
        "outlet": "bloomberg.com",
    }


def test_detail_error_is_soft_and_junk_is_a_parse_error():
    assert parse(b'{"detail": {"error": "Query is too long."}}').error_message == "tavily: Query is too long."
    with pytest.raises(ParseError):
        parse(b'{"answer": "x"}')
    with pytest.raises(ParseError):
        parse(fixture_bytes(*RECORDED)[:2000])


def test_build_request():
    request = SearchRequest.create(
        "What is the Semantic Kernel?",
        "news",
        max_results=40,
        expert_params={
            "site": "https://learn.microsoft.com/en-us/",
            "dateFrom": "2025-01-01",
            "filetype": "pdf",
        },
    )
    spec = PROTOCOL.build_request(request, CONFIG)
    assert (spec.method, spec.url) == ("POST", "https://api.tavily.com/search")
    assert spec.headers["Authorization"] == "Bearer tvly-secret-0001"
    assert spec.json_body == {
        "query": "What is the Semantic Kernel?",
        "max_results": 20,
        "topic": "news",
        "search_depth": "basic",
        "include_domains": ["learn.microsoft.com"],
        "start_date": "2025-01-01",
    }
    page = PROTOCOL.parse_response(RawResponse(200, {}, b'{"results": []}'), spec, request)
    assert page.note == "ignored by this provider: filetype"


def test_web_topic_and_search_depth_setting():
    config = InstanceConfig(
        "t", "tavily", base_url="http://127.0.0.1:5/tav", extras={"searchDepth": "advanced"}
    )
    spec = PROTOCOL.build_request(SearchRequest.create("q", "web"), config)
    assert spec.url == "http://127.0.0.1:5/tav/search"
    assert spec.json_body["topic"] == "general" and spec.json_body["search_depth"] == "advanced"
    assert "Authorization" not in spec.headers


def test_describe_error_and_metadata():
    raw = RawResponse(401, {}, b'{"detail": {"error": "Unauthorized: missing or invalid API key."}}')
    assert PROTOCOL.describe_error(raw) == "Unauthorized: missing or invalid API key."
    assert PROTOCOL.env_key == "TAVILY_API_KEY"
    assert {m.value for m in PROTOCOL.modalities} == {"WEB", "NEWS"}


@FUZZ
@given(st.binary(max_size=400))
def test_any_bytes_parse_or_raise_parse_error(body):
    parse_or_parse_error(PROTOCOL, body, Modality.WEB)


@FUZZ
@given(st.data())
def test_truncated_and_garbled_recorded_body(data):
    body = fixture_bytes(*RECORDED)
    parse_or_parse_error(PROTOCOL, data.draw(truncations(body)), Modality.WEB)
    parse_or_parse_error(PROTOCOL, data.draw(garbles(body)), Modality.NEWS)


@FUZZ
@given(json_like(TAVILY_KEYS), st.sampled_from(sorted(PROTOCOL.modalities)))
def test_wrong_shapes_raise_only_parse_error(value, modality):
    parse_or_parse_error(PROTOCOL, encoded(value), modality)

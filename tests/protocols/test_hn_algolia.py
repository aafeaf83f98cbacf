"""Hacker News (Algolia): endpoints per modality, date filters, and the recorded bodies."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import ContentInline, InstanceConfig, Modality, ParseError, RawResponse, SearchRequest
from zarniwoop.protocols.hn_algolia import PROTOCOL

from ..support.fuzz_academic import survives_broken_json
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

CONFIG = InstanceConfig("hackernews", "hackernews")


def parse(body: bytes, modality: str = "news", **kw):
    return parse_body(PROTOCOL, CONFIG, "stephen", modality, body, **kw)


def test_protocol_id_and_modalities():
    assert PROTOCOL.id == "hackernews"
    assert PROTOCOL.modalities == {Modality.NEWS, Modality.WEB}


def test_news_uses_search_by_date_web_uses_relevance():
    news = PROTOCOL.build_request(SearchRequest.create("rust", "news", max_results=5), CONFIG)
    web = PROTOCOL.build_request(SearchRequest.create("rust", "web"), CONFIG)
    assert news.url == "https://hn.algolia.com/api/v1/search_by_date"
    assert web.url == "https://hn.algolia.com/api/v1/search"
    assert dict(news.params) == {"query": "rust", "tags": "story", "hitsPerPage": "5", "page": "0"}
    relevance = InstanceConfig(
        "hn", "hackernews", base_url="http://127.0.0.1:9/hn", extras={"sort": "relevance"}
    )
    assert PROTOCOL.build_request(SearchRequest.create("rust", "news"), relevance).url == (
        "http://127.0.0.1:9/hn/api/v1/search"
    )


def test_dates_become_created_at_i_numeric_filters():
    request = SearchRequest.create(
        "rust", "news", expert_params={"dateFrom": "2020-02-01", "dateTo": "2020-02-09"}
    )
    params = dict(PROTOCOL.build_request(request, CONFIG).params)
    start = int(datetime(2020, 2, 1, tzinfo=UTC).timestamp())
    end = int(datetime(2020, 2, 10, tzinfo=UTC).timestamp())
    assert params["numericFilters"] == f"created_at_i>={start},created_at_i<{end}"


def test_relevance_body_stephen_2018():
    page = parse(fixture_bytes("hackernews", "search-query-stephen-2018.json"), "web", max_results=20)
    assert page.total == 21010
    assert len(page.hits) == 20
    first = page.hits[0]
    assert first.title == "Stephen Hawking has died"
    assert first.url == "http://www.bbc.com/news/uk-43396008"
    assert first.modality is Modality.WEB
    assert first.snippet == "6015 points · 436 comments · by Cogito"
    assert first.extras == {
        "publishedAt": "2018-03-14T03:50:30.000Z",
        "outlet": "bbc.com",
        "points": 6015,
        "numComments": 436,
        "author": "Cogito",
        "discussionUrl": "https://news.ycombinator.com/item?id=16582136",
        "hnId": "16582136",
    }
    assert page.hits[2].title == "Intel open sourced Stephen Hawking’s speech system"  # curly quote kept


def test_by_date_body_trump_2020_newest_first_with_outlets():
    page = parse(fixture_bytes("hackernews", "search-by-date-tags-story-trump-2020.json"), max_results=20)
    assert page.total == 8484
    assert len(page.hits) == 20
    assert page.hits[0].title == "$4.8T Budget with Big Safety-Net Cuts"
    assert page.hits[0].extras["outlet"] == "wsj.com"
    assert page.hits[0].extras["publishedAt"] == "2020-02-10T03:01:34.000Z"
    assert page.hits[1].extras["outlet"] == "theguardian.com"
    published = [h.extras["publishedAt"] for h in page.hits]
    assert published == sorted(published, reverse=True)


def test_text_post_falls_back_to_the_discussion_url_and_embeds_its_text():
    page = parse(fixture_bytes("hackernews", "search-tags-story-single-hit-story-text-2020.json"))
    [hit] = page.hits
    assert hit.title == "S&P ending '08 around 900, thus... Summer of '97 Thread"
    assert hit.url == "https://news.ycombinator.com/item?id=415542"  # `url: ""` in the body
    assert hit.extras["outlet"] == "Hacker News"
    assert hit.content.inline is ContentInline.EMBED_TEXT
    assert hit.content.text.startswith("With the S&P set to close at mid-June 1997 levels")
    assert "summer of '97. I was between 8th and 9th grade" in hit.content.text  # <p> became a space


def test_unsupported_params_named_and_algolia_error_is_soft():
    page = parse(
        fixture_bytes("hackernews", "search-query-stephen-2018.json"), expert_params={"site": "bbc.com"}
    )
    assert page.note == "ignored by this provider: site"
    assert parse(b'{"message": "Invalid value for numericFilters", "status": 400}').error_message == (
        "hackernews: Invalid value for numericFilters"
    )
    with pytest.raises(ParseError):
        parse(b'{"nbHits": 3}')


def test_describe_error_reads_algolias_message():
    raw = RawResponse(400, {}, b'{"message": "Invalid value for hitsPerPage", "status": 400}')
    assert PROTOCOL.describe_error(raw) == "Invalid value for hitsPerPage"
    assert PROTOCOL.describe_error(RawResponse(502, {}, b"<html>Bad Gateway</html>")) is None


@settings(deadline=None)
@given(data=st.data())
def test_broken_bodies_raise_only_parse_error(data):
    survives_broken_json(
        parse, data, fixture_bytes("hackernews", "search-tags-story-single-hit-story-text-2020.json")
    )

"""SearXNG: every recorded body (results, failures, errors), synthetic category bodies, config, junk."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarniwoop.contract import Modality, SearchRequest
from zarniwoop.contract.errors import ConfigError, ParseError
from zarniwoop.contract.protocol import InstanceConfig, RawResponse
from zarniwoop.protocols.searxng import JSON_DISABLED, PROTOCOL

from ..support.fuzz import encoded, garbles, json_like, parse_or_parse_error, truncations
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body
from ..support.providers_web import synthetic_bytes

CONFIG = InstanceConfig("searxng", "searxng", base_url="https://searx.example.org/")
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEARXNG_KEYS = [
    "query",
    "results",
    "url",
    "title",
    "content",
    "engine",
    "engines",
    "score",
    "publishedDate",
    "img_src",
    "thumbnail_src",
    "thumbnail",
    "resolution",
    "length",
    "author",
    "authors",
    "doi",
    "journal",
    "pdf_url",
    "unresponsive_engines",
    "corrections",
    "error",
    "template",
]


def parse(body: bytes, modality: str = "web", **kw):
    return parse_body(PROTOCOL, CONFIG, "stephen", modality, body, **kw)


def test_two_engines_interleaved():
    page = parse(fixture_bytes("searxng", "search-json-two-engines-hn-exa.json"))
    assert len(page.hits) == 30  # 20 HN + 10 Exa; the instance trims to maxResults
    first, second = page.hits[:2]
    assert (first.title, first.url) == ("Stephen Hawking has died", "http://www.bbc.com/news/uk-43396008")
    assert first.snippet is None  # json_engine's "None" artefact is not a snippet
    assert first.extras == {"engines": ["hn algolia"], "score": 1.0}
    assert second.title == "AI agents arrived in 2025 – here's what happened and the ..."
    assert second.snippet.startswith(
        "AI agents arrived in 2025 –here’s what happened and the challenges ahead"
    )
    assert second.extras["engines"] == ["exa"]
    assert page.hits[2].snippet is None  # empty content
    assert page.hits[-1].title == "Stephen Hawking lost $100 bet over Higgs boson discovery"
    assert page.note is None and page.error_message is None


def test_one_engine_timeout_goes_into_the_note():
    page = parse(fixture_bytes("searxng", "search-json-one-engine-timeout.json"))
    assert len(page.hits) == 30 and page.hits[0].title == "Stephen Hawking has died"
    assert page.note == "unresponsive engines: silent upstream (timeout)"
    assert page.error_message is None


def test_merged_duplicates_name_both_engines():
    page = parse(fixture_bytes("searxng", "search-json-duplicate-urls-merged-two-engines.json"))
    assert len(page.hits) == 20
    assert [h.extras["score"] for h in page.hits[:3]] == [4.0, 2.0, 1.3333333333333333]
    assert all(h.extras["engines"] == ["hn algolia", "hn mirror"] for h in page.hits)
    assert page.hits[3].url == "http://www.nealstephenson.com/social-media.html"


def test_second_page_from_the_paging_engine_only():
    page = parse(fixture_bytes("searxng", "search-json-pageno2-exa-not-paging.json"))
    assert len(page.hits) == 20
    assert page.hits[0].title == "$4.8T Budget with Big Safety-Net Cuts"
    assert (
        page.hits[2].url
        == "https://spin.atomicobject.com/2020/02/09/prof-dev-older-developers/#.XkAQ1lWcd2I.hackernews"
    )
    assert {e for h in page.hits for e in h.extras["engines"]} == {"hn algolia"}


def test_every_engine_failed_is_a_soft_error_naming_them():
    page = parse(fixture_bytes("searxng", "search-json-all-engines-failed.json"))
    assert page.hits == ()
    assert page.error_message == (
        "searxng: no results; engines that failed: fail badjson (parsing error), fail http429 (too many requests), "
        "fail http500 (HTTP error), fail refused (HTTP connection error)"
    )
    suspended = parse(fixture_bytes("searxng", "search-json-all-engines-failed-repeat-suspended.json"))
    assert "fail http429 (Suspended: too many requests)" in suspended.error_message
    assert "fail badjson (parsing error)" in suspended.note


def test_error_bodies_are_described():
    no_query = RawResponse(400, {}, fixture_bytes("searxng", "error-400-no-query.json"))
    assert PROTOCOL.describe_error(no_query) == "No query"
    pageno = RawResponse(400, {}, fixture_bytes("searxng", "error-400-invalid-pageno.json"))
    assert PROTOCOL.describe_error(pageno) == "Invalid value 0 for parameter pageno"
    html = fixture_bytes("searxng", "error-403-json-format-not-enabled.html")
    assert PROTOCOL.describe_error(RawResponse(403, {}, html)) == JSON_DISABLED
    assert "search.formats" in JSON_DISABLED
    with pytest.raises(ParseError):  # the HTML page is never mistaken for results
        parse(html)
    assert parse(fixture_bytes("searxng", "error-400-no-query.json")).error_message == "searxng: No query"


def test_images_category():
    page = parse(synthetic_bytes("searxng", "images-synthetic.json"), "image")
    first, second = page.hits
    assert first.url == "https://photos.example.org/aurora-tromso"
    assert first.extras["imageUrl"] == "https://images.example.org/aurora-tromso.jpg"
    assert first.extras["thumbnailUrl"] == "https://images.example.org/aurora-tromso-thumb.jpg"
    assert (first.extras["width"], first.extras["height"]) == (1920, 1080)
    assert first.extras["engines"] == ["bing images", "duckduckgo images"]
    assert "width" not in second.extras and second.snippet == "Lapland, winter 2024"


def test_videos_category():
    page = parse(synthetic_bytes("searxng", "videos-synthetic.json"), "video")
    first, second = page.hits
    assert first.extras["duration"] == "10:42" and first.extras["channel"] == "Example Dev Channel"
    assert first.extras["thumbnailUrl"] == "https://i.ytimg.com/vi/abc123XYZ00/hqdefault.jpg"
    assert first.extras["publishedAt"] == "2025-03-03T12:00:00"
    assert second.extras["duration"] == "45:10"  # a timedelta serialised as seconds
    assert page.note == "unresponsive engines: dailymotion (timeout)"


def test_science_category():
    page = parse(synthetic_bytes("searxng", "science-synthetic.json"), "academic")
    paper = page.hits[0]
    assert paper.extras["doi"] == "10.48550/arXiv.1706.03762"
    assert paper.extras["authors"] == ["Ashish Vaswani", "Noam Shazeer", "Niki Parmar"]
    assert paper.extras["venue"] == "Advances in Neural Information Processing Systems"
    assert (paper.extras["year"], paper.extras["pdfUrl"]) == (2017, "https://arxiv.org/pdf/1706.03762")
    assert page.hits[1].extras["venue"] == "ACM"


def test_news_outlet_from_host():
    page = parse(fixture_bytes("searxng", "search-json-two-engines-hn-exa.json"), "news")
    assert page.hits[0].extras["outlet"] == "bbc.com" and page.hits[0].modality is Modality.NEWS


def test_build_request():
    request = SearchRequest.create("aurora", "image", locale="de-DE", expert_params={"site": "flickr.com"})
    spec = PROTOCOL.build_request(
        request,
        InstanceConfig("s", "searxng", base_url="http://127.0.0.1:8888", extras={"engines": "bing images"}),
    )
    assert (spec.method, spec.url) == ("GET", "http://127.0.0.1:8888/search")
    assert spec.params == (
        ("q", "aurora site:flickr.com"),
        ("format", "json"),
        ("categories", "images"),
        ("pageno", "1"),
        ("language", "de"),
        ("engines", "bing images"),
    )
    assert spec.headers == {"Accept": "application/json"}
    categories = {
        m: dict(PROTOCOL.build_request(SearchRequest.create("q", m), CONFIG).params)["categories"]
        for m in ("web", "video", "news", "academic")
    }
    assert categories == {"web": "general", "video": "videos", "news": "news", "academic": "science"}


def test_dates_become_a_widened_time_range():
    today = date(2025, 9, 30)
    request = SearchRequest.create(
        "q",
        "news",
        expert_params={"dateFrom": (today - timedelta(days=5)).isoformat(), "dateTo": today.isoformat()},
    ).on(today)
    spec = PROTOCOL.build_request(request, CONFIG)
    assert dict(spec.params)["time_range"] == "week"
    page = PROTOCOL.parse_response(RawResponse(200, {}, b'{"results": []}'), spec, request)
    assert page.note == "dateFrom widened to time_range=week"
    old = SearchRequest.create(
        "q", "web", expert_params={"dateFrom": "2001-01-01", "dateTo": "2002-01-01"}
    ).on(today)
    spec = PROTOCOL.build_request(old, CONFIG)
    assert "time_range" not in dict(spec.params)
    assert PROTOCOL.parse_response(RawResponse(200, {}, b'{"results": []}'), spec, old).note == (
        "ignored by this provider: dateFrom, dateTo"
    )


def test_base_url_is_required_and_must_be_http():
    with pytest.raises(ConfigError) as missing:
        PROTOCOL.validate_config(InstanceConfig("sx-home", "searxng"))
    assert missing.value.key == "research.endpoint.sx-home.baseUrl"
    assert "required" in missing.value.reason
    with pytest.raises(ConfigError, match="must be an http"):
        PROTOCOL.validate_config(InstanceConfig("sx", "searxng", base_url="searx.example.org"))
    PROTOCOL.validate_config(CONFIG)  # fine


def test_metadata():
    assert not PROTOCOL.key_required
    assert {m.value for m in PROTOCOL.modalities} == {"WEB", "IMAGE", "VIDEO", "NEWS", "ACADEMIC"}


@FUZZ
@given(st.binary(max_size=400))
def test_any_bytes_parse_or_raise_parse_error(body):
    parse_or_parse_error(PROTOCOL, body, Modality.WEB)
    detail = PROTOCOL.describe_error(RawResponse(403, {}, body))
    assert detail is None or isinstance(detail, str)


@FUZZ
@given(st.data())
def test_truncated_and_garbled_recorded_bodies(data):
    body = fixture_bytes("searxng", "search-json-one-engine-timeout.json")
    parse_or_parse_error(PROTOCOL, data.draw(truncations(body)), Modality.WEB)
    parse_or_parse_error(PROTOCOL, data.draw(garbles(body)), Modality.NEWS)


@FUZZ
@given(json_like(SEARXNG_KEYS), st.sampled_from(sorted(PROTOCOL.modalities)))
def test_wrong_shapes_raise_only_parse_error(value, modality):
    parse_or_parse_error(PROTOCOL, encoded(value), modality)


@pytest.mark.parametrize("corrections", [True, 1, {"q": "stefan"}, "stefan", None])
def test_corrections_that_are_not_a_list_say_nothing(corrections):
    """`"corrections": true` raised TypeError (the fuzz test found it; issue 28 item 7)."""
    body = encoded({"query": "stephen", "results": [], "corrections": corrections})
    page = parse(body)
    assert page.hits == () and page.error_message is None
    assert "did you mean" not in (page.note or "")


def test_corrections_list_suggests_the_first_string():
    body = encoded({"query": "stephen", "results": [], "corrections": [3, "", "stefan", "steven"]})
    assert "did you mean: stefan" in (parse(body).note or "")

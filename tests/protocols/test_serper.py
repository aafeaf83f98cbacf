"""Serper: every recorded body parsed with concrete values, the request per vertical, and junk bodies."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarniwoop.contract import ContentInline, Modality, SearchRequest
from zarniwoop.contract.errors import ParseError
from zarniwoop.contract.protocol import InstanceConfig, RawResponse, Secret
from zarniwoop.protocols.serper import PROTOCOL

from ..support.fuzz import encoded, garbles, json_like, parse_or_parse_error, truncations
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body
from ..support.providers_web import synthetic_bytes

CONFIG = InstanceConfig("serper", "serper", api_key=Secret("serper-key-0001"))
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
SERPER_KEYS = [
    "searchParameters",
    "organic",
    "news",
    "images",
    "videos",
    "title",
    "link",
    "snippet",
    "date",
    "source",
    "imageUrl",
    "imageWidth",
    "duration",
    "channel",
    "publicationInfo",
    "citedBy",
    "year",
    "pdfUrl",
    "message",
    "position",
]


def parse(body: bytes, modality: str = "web", **kw):
    return parse_body(PROTOCOL, CONFIG, "q", modality, body, **kw)


# --- recorded bodies -------------------------------------------------------------------------------


def test_news_body_outlets_and_relative_dates():
    page = parse(fixture_bytes("serper", "news-apple-inc-playground-2025.json"), "news")
    assert len(page.hits) == 10
    first = page.hits[0]
    assert first.title == "Apple Plots Expansion Into AI Robots, Home Security and Smart Displays"
    assert first.url == "https://finance.yahoo.com/news/apple-plots-expansion-ai-robots-182112041.html"
    assert first.snippet.startswith(
        "(Bloomberg) -- Apple Inc. is plotting its artificial intelligence comeback"
    )
    assert first.modality is Modality.NEWS and first.source == "serper"
    assert first.extras == {"publishedAt": "6 hours ago", "outlet": "Yahoo Finance", "position": 1}
    assert [h.extras["outlet"] for h in page.hits[1:5]] == [
        "Seeking Alpha",
        "The Business Journals",
        "TipRanks",
        "TheStreet",
    ]
    assert page.hits[4].extras["publishedAt"] == "34 minutes ago"
    assert all("thumbnailUrl" not in h.extras for h in page.hits)  # no imageUrl in this body
    assert page.note is None and page.error_message is None


def test_batch_array_with_fewer_organic_than_asked():
    page = parse(fixture_bytes("serper", "search-batch-array-ai-agent-top-stories.json"))
    assert [h.url for h in page.hits] == [
        "https://aiagent.app/",
        "https://en.wikipedia.org/wiki/Intelligent_agent",
        "https://zapier.com/blog/ai-agent/",
        *[h.url for h in page.hits[3:]],
    ]
    assert len(page.hits) == 5  # num=6 was asked, Google gave 5; topStories are not web hits
    assert page.hits[0].title == "AI Agent • Supercharge Your Workflows with AI"
    assert page.hits[1].snippet.startswith("In artificial intelligence, an intelligent agent (IA)")
    assert page.hits[2].extras == {"position": 3, "date": "Jun 1, 2023"}


def test_batch_array_metagpt_eight_organic():
    page = parse(fixture_bytes("serper", "search-batch-array-metagpt-8-organic.json"))
    assert len(page.hits) == 8
    assert page.hits[0].title.startswith("geekan/MetaGPT: The Multi-Agent Framework")
    assert page.hits[0].url == "https://github.com/geekan/MetaGPT"
    assert page.hits[0].extras == {"position": 1}  # no date on this one
    assert page.hits[1].url == "https://arxiv.org/abs/2308.00352"
    assert page.hits[1].extras["date"] == "Aug 1, 2023"
    assert page.hits[1].snippet.startswith("Abstract:Remarkable progress has been made")
    assert page.hits[7].url == "https://openreview.net/forum?id=VtmBAGCN7o"


def test_single_object_answer_box_is_not_a_hit():
    page = parse(fixture_bytes("serper", "search-single-object-world-cup-answerbox-knowledgegraph.json"))
    assert len(page.hits) == 10
    assert page.hits[0].title == "2022 FIFA World Cup final - Wikipedia"
    assert page.hits[0].snippet.startswith("France finished first in Group D")
    assert page.hits[1].url == "https://www.youtube.com/watch?v=EROb-E23ZVs"
    assert page.hits[9].title == "2022 World Cup: Full list of past winners year-by-year - NBC Sports"
    assert "Argentina national football team" not in [h.title for h in page.hits]


def test_pdf_modality_marks_hits_as_pdfs_to_load_on_demand():
    page = parse(fixture_bytes("serper", "search-batch-array-metagpt-8-organic.json"), "pdf")
    hit = page.hits[1]
    assert hit.modality is Modality.PDF
    assert hit.extras["pdfUrl"] == "https://arxiv.org/abs/2308.00352"
    assert hit.content.inline is ContentInline.STASH_ON_DEMAND
    assert hit.content.ref == "https://arxiv.org/abs/2308.00352"
    assert hit.content.mime_type == "application/pdf"


# --- synthetic bodies (no recorded /images, /videos, /scholar body exists) -------------------------


def test_images_extras():
    page = parse(synthetic_bytes("serper", "images-synthetic.json"), "image")
    assert len(page.hits) == 2  # the untitled third image is skipped
    hit = page.hits[0]
    assert hit.url == "https://photos.example.org/aurora-tromso"
    assert hit.extras["imageUrl"] == "https://images.example.org/aurora-tromso.jpg"
    assert hit.extras["thumbnailUrl"] == "https://encrypted-tbn0.gstatic.com/images?q=tbn:aurora1"
    assert (hit.extras["width"], hit.extras["height"]) == (1920, 1080)


def test_videos_extras():
    page = parse(synthetic_bytes("serper", "videos-synthetic.json"), "video")
    assert [h.extras["duration"] for h in page.hits] == ["10:42", "3:05:17"]
    assert page.hits[0].extras["channel"] == "Example Dev Channel"
    assert page.hits[0].extras["thumbnailUrl"] == "https://i.ytimg.com/vi/abc123XYZ00/mqdefault.jpg"


def test_scholar_extras_from_publication_info():
    page = parse(synthetic_bytes("serper", "scholar-synthetic.json"), "academic")
    first, second = page.hits
    assert first.title == "Attention is all you need"
    assert first.extras["authors"] == ["A Vaswani", "N Shazeer", "N Parmar"]
    assert first.extras["venue"] == "Advances in neural information processing systems"
    assert (first.extras["year"], first.extras["citedByCount"]) == (2017, 150000)
    assert first.extras["pdfUrl"].endswith("-Paper.pdf")
    assert second.extras["doi"] == "10.1145/3505244"
    assert second.extras["venue"] == "ACM computing surveys (CSUR)"


def test_empty_result_list_is_an_honest_empty_page():
    page = parse(b'{"searchParameters": {"q": "zzzz", "type": "search"}}')
    assert page.hits == () and page.error_message is None


def test_message_without_results_is_a_soft_error():
    page = parse(b'{"message": "Not enough credits", "statusCode": 400}')
    assert page.error_message == "serper: Not enough credits"


# --- requests --------------------------------------------------------------------------------------


def test_build_request_web():
    spec = PROTOCOL.build_request(SearchRequest.create("metagpt", "web", max_results=8), CONFIG)
    assert (spec.method, spec.url) == ("POST", "https://google.serper.dev/search")
    assert spec.headers["X-API-KEY"] == "serper-key-0001"
    assert spec.headers["Content-Type"] == "application/json"
    assert spec.json_body == {"q": "metagpt", "num": 8}


def test_build_request_per_vertical():
    urls = {
        m: PROTOCOL.build_request(SearchRequest.create("q", m), CONFIG).url
        for m in ("image", "video", "news", "academic", "pdf")
    }
    assert urls == {
        "image": "https://google.serper.dev/images",
        "video": "https://google.serper.dev/videos",
        "news": "https://google.serper.dev/news",
        "academic": "https://google.serper.dev/scholar",
        "pdf": "https://google.serper.dev/search",
    }


def test_pdf_is_a_web_search_with_filetype():
    spec = PROTOCOL.build_request(SearchRequest.create("transformer survey", "pdf"), CONFIG)
    assert spec.json_body["q"] == "transformer survey filetype:pdf"


def test_expert_params_map_to_operators_and_tbs():
    request = SearchRequest.create(
        "climate",
        "web",
        locale="de-AT",
        expert_params={"site": "ipcc.ch", "dateFrom": "2024-01-31", "dateTo": "2024-12-01", "language": "de"},
    )
    spec = PROTOCOL.build_request(
        request, InstanceConfig("s", "serper", base_url="http://127.0.0.1:1/serper/")
    )
    assert spec.url == "http://127.0.0.1:1/serper/search"
    assert "X-API-KEY" not in spec.headers  # no key configured: the gate never lets this go out
    assert spec.json_body == {
        "q": "climate site:ipcc.ch",
        "num": 10,
        "hl": "de",
        "gl": "at",
        "tbs": "cdr:1,cd_min:1/31/2024,cd_max:12/1/2024",
    }
    page = PROTOCOL.parse_response(
        RawResponse(200, {}, b'{"searchParameters": {}, "organic": []}'), spec, request
    )
    assert page.note is None  # everything honoured


def test_scholar_dates_are_years_and_the_note_says_so():
    request = SearchRequest.create(
        "crispr", "academic", expert_params={"dateFrom": "2019-05-01", "filetype": "docx"}
    )
    spec = PROTOCOL.build_request(request, CONFIG)
    assert spec.json_body["as_ylo"] == 2019 and "tbs" not in spec.json_body
    page = PROTOCOL.parse_response(RawResponse(200, {}, b'{"searchParameters": {}}'), spec, request)
    assert page.note == "Google Scholar filters dates by whole years"  # filetype: operator passed on


def test_pdf_modality_names_a_conflicting_filetype():
    request = SearchRequest.create("budget", "pdf", expert_params={"filetype": "xlsx"})
    spec = PROTOCOL.build_request(request, CONFIG)
    assert spec.json_body["q"] == "budget filetype:pdf"
    page = PROTOCOL.parse_response(RawResponse(200, {}, b'{"searchParameters": {}}'), spec, request)
    assert page.note == "ignored by this provider: filetype"


def test_describe_error_reads_the_message():
    raw = RawResponse(403, {}, b'{"message": "Unauthorized.", "statusCode": 403}')
    assert PROTOCOL.describe_error(raw) == "Unauthorized."
    assert PROTOCOL.describe_error(RawResponse(500, {}, b"<html>")) is None


def test_metadata():
    assert PROTOCOL.key_required and PROTOCOL.env_key == "SERPER_API_KEY"
    assert {m.value for m in PROTOCOL.modalities} == {"WEB", "IMAGE", "VIDEO", "PDF", "NEWS", "ACADEMIC"}
    assert "Google" in PROTOCOL.prompt_hint


# --- junk ------------------------------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=400))
def test_any_bytes_parse_or_raise_parse_error(body):
    for modality in (Modality.WEB, Modality.ACADEMIC):
        parse_or_parse_error(PROTOCOL, body, modality)


@FUZZ
@given(st.data())
def test_truncated_and_garbled_recorded_bodies(data):
    body = fixture_bytes("serper", "search-single-object-world-cup-answerbox-knowledgegraph.json")
    parse_or_parse_error(PROTOCOL, data.draw(truncations(body)), Modality.WEB)
    parse_or_parse_error(PROTOCOL, data.draw(garbles(body)), Modality.WEB)


@FUZZ
@given(json_like(SERPER_KEYS), st.sampled_from(sorted(PROTOCOL.modalities)))
def test_wrong_shapes_raise_only_parse_error(value, modality):
    parse_or_parse_error(PROTOCOL, encoded(value), modality)


def test_truncated_body_is_a_parse_error():
    body = fixture_bytes("serper", "news-apple-inc-playground-2025.json")
    with pytest.raises(ParseError, match="not JSON"):
        parse(body[:100], "news")

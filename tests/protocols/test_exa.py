"""Exa: both recorded bodies per modality, the request body, and junk."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarniwoop.contract import ContentInline, Modality, SearchRequest
from zarniwoop.contract.errors import ParseError
from zarniwoop.contract.protocol import InstanceConfig, RawResponse, Secret
from zarniwoop.protocols.exa import PROTOCOL, plain_text

from ..support.fuzz import encoded, garbles, json_like, parse_or_parse_error, truncations
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

CONFIG = InstanceConfig("exa", "exa", api_key=Secret("exa-secret-0001"))
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
EXA_KEYS = [
    "requestId",
    "results",
    "id",
    "url",
    "title",
    "publishedDate",
    "author",
    "text",
    "image",
    "favicon",
    "score",
    "highlights",
    "summary",
    "error",
    "costDollars",
]
AI_AGENTS = ("exa", "search-auto-text-ai-agents-2025.json")
DOMAINS = ("exa", "search-auto-include-domains-learning-capabilities.json")


def parse(body: bytes, modality: str = "web", **kw):
    return parse_body(PROTOCOL, CONFIG, "q", modality, body, **kw)


def test_ai_agents_body_as_web():
    page = parse(fixture_bytes(*AI_AGENTS))
    assert len(page.hits) == 10
    first = page.hits[0]
    assert first.title == "AI agents arrived in 2025 – here's what happened and the ..."
    assert first.url == (
        "https://theconversation.com/ai-agents-arrived-in-2025-heres-what-happened-and-the-challenges-ahead-in-2026-272325"
    )
    assert first.snippet.startswith(
        "AI agents arrived in 2025 –here’s what happened and the challenges ahead"
    )
    assert first.extras["author"] == "Thomas Şerban von Davier"
    assert first.extras["publishedAt"] == "2025-12-29T00:00:00.000Z"
    assert first.content.inline is ContentInline.EMBED_TEXT and len(first.content.text) == 8876
    assert [h.url for h in page.hits[5:8]] == [
        "https://arxiv.org/abs/2509.02547",
        "https://arxiv.org/abs/2510.05592",
        "https://arxiv.org/abs/2509.06283",
    ]
    assert "author" not in page.hits[5].extras  # "[Submitted on 2 Sep 2025]" is page furniture, not a name
    assert page.hits[8].extras["author"] == "Silver, David"


def test_ai_agents_body_as_academic():
    page = parse(fixture_bytes(*AI_AGENTS), "academic")
    survey = page.hits[5]
    assert survey.title == "The Landscape of Agentic Reinforcement Learning for LLMs: A Survey"
    assert survey.modality is Modality.ACADEMIC
    assert survey.extras["pdfUrl"] == "https://arxiv.org/pdf/2509.02547"
    assert survey.extras["year"] == 2025 and "authors" not in survey.extras
    assert survey.snippet.startswith("2509.02547 The Landscape of Agentic Reinforcement Learning")
    nature = page.hits[8]
    assert nature.extras["authors"] == ["Silver, David"] and "pdfUrl" not in nature.extras


def test_include_domains_body_as_news():
    page = parse(fixture_bytes(*DOMAINS), "news")
    assert len(page.hits) == 10
    assert [h.extras["outlet"] for h in page.hits[:3]] == [
        "kodexolabs.com",
        "rolustech.com",
        "kodexolabs.com",
    ]
    assert page.hits[1].extras["author"] == "Amer Wilson"
    assert "author" not in page.hits[0].extras and "author" not in page.hits[3].extras  # null and ""
    assert "imageUrl" not in page.hits[8].extras and "imageUrl" not in page.hits[9].extras  # keys absent
    assert page.hits[9].title.startswith("AI agents are here. Here’s what to know")
    assert page.hits[9].snippet.startswith("George Peters / Getty Images We are entering the third phase")
    assert page.hits[8].snippet.startswith("Skip to content How Agentic AI Elevates Data Analytics")


def test_pdf_modality_keeps_text_and_names_the_pdf():
    page = parse(fixture_bytes(*DOMAINS), "pdf")
    hit = page.hits[0]
    assert hit.extras["pdfUrl"] == "https://kodexolabs.com/what-are-autonomous-ai-agents/"
    assert hit.content.inline is ContentInline.EMBED_TEXT
    assert hit.content.text.startswith("What are Autonomous AI Agents? A Complete Guide 2025")


def test_pdf_without_text_is_stashed_on_demand():
    page = parse(b'{"results": [{"url": "https://x.org/a.pdf", "title": "A"}]}', "pdf")
    assert page.hits[0].content.inline is ContentInline.STASH_ON_DEMAND
    assert page.hits[0].content.ref == "https://x.org/a.pdf"


def test_highlights_win_over_text_for_the_snippet():
    body = b'{"results": [{"url": "https://x.org", "title": "T", "text": "long text", "highlights": ["The key sentence."]}]}'
    assert parse(body).hits[0].snippet == "The key sentence."


def test_markdown_is_made_readable():
    assert plain_text("Guide[Skip to content] \n[![]] \n* [About us](https://x) # Title &amp; more") == (
        "GuideSkip to content About us Title & more"
    )


def test_error_without_results_is_soft_and_junk_is_a_parse_error():
    assert parse(b'{"error": "Invalid category"}').error_message == "exa: Invalid category"
    with pytest.raises(ParseError):
        parse(b'{"requestId": "x"}')
    with pytest.raises(ParseError):
        parse(fixture_bytes(*AI_AGENTS)[:5000])


def test_build_request():
    request = SearchRequest.create(
        "recent developments in autonomous AI agents 2025",
        "academic",
        max_results=7,
        expert_params={
            "site": "arxiv.org",
            "dateFrom": "2025-01-01",
            "dateTo": "2025-12-31",
            "language": "de",
        },
    )
    spec = PROTOCOL.build_request(request, CONFIG)
    assert (spec.method, spec.url) == ("POST", "https://api.exa.ai/search")
    assert spec.headers["x-api-key"] == "exa-secret-0001"
    assert spec.json_body == {
        "query": "recent developments in autonomous AI agents 2025",
        "numResults": 7,
        "type": "auto",
        "contents": {"text": {"maxCharacters": 2000}},
        "category": "research paper",
        "includeDomains": ["arxiv.org"],
        "startPublishedDate": "2025-01-01",
        "endPublishedDate": "2025-12-31",
    }
    page = PROTOCOL.parse_response(RawResponse(200, {}, b'{"results": []}'), spec, request)
    assert page.note == "ignored by this provider: language"


def test_categories_and_filetype():
    def body(modality, **expert):
        request = SearchRequest.create("q", modality, expert_params=expert)
        return PROTOCOL.build_request(
            request, InstanceConfig("e", "exa", extras={"textMaxCharacters": "500"})
        ).json_body

    assert "category" not in body("web")
    assert body("news")["category"] == "news"
    assert body("pdf")["category"] == "pdf"
    assert body("web", filetype="pdf")["category"] == "pdf"
    assert body("news", filetype="pdf")["category"] == "news"  # a news search cannot also be a PDF search
    assert body("web")["contents"] == {"text": {"maxCharacters": 500}}


def test_describe_error_and_metadata():
    assert PROTOCOL.describe_error(RawResponse(401, {}, b'{"error": "Invalid API key"}')) == "Invalid API key"
    assert PROTOCOL.env_key == "EXA_API_KEY" and PROTOCOL.key_required
    assert {m.value for m in PROTOCOL.modalities} == {"WEB", "ACADEMIC", "NEWS", "PDF"}


@FUZZ
@given(st.binary(max_size=400))
def test_any_bytes_parse_or_raise_parse_error(body):
    parse_or_parse_error(PROTOCOL, body, Modality.ACADEMIC)


@FUZZ
@given(st.data())
def test_truncated_and_garbled_recorded_bodies(data):
    body = fixture_bytes(*DOMAINS)
    parse_or_parse_error(PROTOCOL, data.draw(truncations(body)), Modality.WEB)
    parse_or_parse_error(PROTOCOL, data.draw(garbles(body)), Modality.NEWS)


@FUZZ
@given(json_like(EXA_KEYS), st.sampled_from(sorted(PROTOCOL.modalities)))
def test_wrong_shapes_raise_only_parse_error(value, modality):
    parse_or_parse_error(PROTOCOL, encoded(value), modality)

"""arXiv: request building, the recorded Atom feeds, and hostile or broken XML."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import ContentInline, InstanceConfig, Modality, ParseError, SearchRequest
from zarniwoop.protocols.arxiv import PROTOCOL, search_query

from ..support.fuzz_academic import any_body, hostile_xml, parses_or_refuses
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

CONFIG = InstanceConfig("arxiv", "arxiv")


def parse(body: bytes, modality: str = "academic", status: int = 200, **kw):
    return parse_body(PROTOCOL, CONFIG, "testing", modality, body, status=status, **kw)


def test_build_request_plain_words_are_anded_all_terms():
    request = SearchRequest.create("deep learning testing", "academic", max_results=7)
    spec = PROTOCOL.build_request(request, CONFIG)
    assert spec.method == "GET"
    assert spec.url == "https://export.arxiv.org/api/query"
    assert dict(spec.params) == {
        "search_query": "all:deep AND all:learning AND all:testing",
        "start": "0",
        "max_results": "7",
        "sortBy": "relevance",
        "sortOrder": "descending",
    }


def test_build_request_keeps_field_syntax_and_maps_dates_to_submitted_date():
    request = SearchRequest.create(
        "ti:transformer AND au:vaswani",
        "pdf",
        expert_params={"dateFrom": "2017-01-01", "dateTo": "2017-12-31"},
    )
    spec = PROTOCOL.build_request(request, InstanceConfig("ax", "arxiv", base_url="http://127.0.0.1:9/ax/"))
    assert spec.url == "http://127.0.0.1:9/ax/api/query"
    assert dict(spec.params)["search_query"] == (
        "(ti:transformer AND au:vaswani) AND submittedDate:[201701010000 TO 201712312359]"
    )


def test_quoted_phrase_stays_one_term():
    assert search_query('"graph neural" networks') == 'all:"graph neural" AND all:networks'


def test_search_feed_ten_entries_with_abstracts_pdf_links_and_ids():
    page = parse(fixture_bytes("arxiv", "query-search-testing-start0-max10.xml"))
    assert page.total == 214881
    assert page.error_message is None and page.note is None
    assert len(page.hits) == 10
    first = page.hits[0]
    assert (
        first.title
        == "Testing Deep Learning Models: A First Comparative Study of Multiple Testing Techniques"
    )
    assert first.url == "https://arxiv.org/abs/2202.12139v1"
    assert first.modality is Modality.ACADEMIC
    assert first.source == "arxiv"
    assert first.content.inline is ContentInline.EMBED_TEXT
    assert first.content.text.startswith(
        "Deep Learning (DL) has revolutionized the capabilities of vision-based"
    )
    assert first.snippet.startswith("Deep Learning (DL) has revolutionized")
    assert first.extras["arxivId"] == "2202.12139"
    assert first.extras["arxivVersion"] == "v1"
    assert first.extras["pdfUrl"] == "https://arxiv.org/pdf/2202.12139v1"
    assert first.extras["doi"] == "10.1109/ICSTW55395.2022.00035"
    assert first.extras["authors"] == ["Mohit Kumar Ahuja", "Arnaud Gotlieb", "Helge Spieker"]
    assert first.extras["year"] == 2022
    assert first.extras["primaryCategory"] == "cs.SE"
    assert first.extras["categories"] == ["cs.SE", "cs.LG"]
    assert first.extras["venue"].startswith("Artificial Intelligence in Software Testing @ 2022 IEEE")
    # An entry with an `&amp;` in its title, and one without a DOI.
    titles = [h.title for h in page.hits]
    assert "ChatGPT and Software Testing Education: Promises & Perils" in titles
    gui = next(h for h in page.hits if h.extras["arxivId"] == "1202.4527")
    assert "doi" not in gui.extras
    assert titles[-1] == (
        "A Systematic Literature Review of Automated Techniques for Functional GUI Testing of Mobile Applications"
    )


def test_pdf_modality_points_hits_at_the_pdf():
    page = parse(fixture_bytes("arxiv", "query-search-testing-start0-max10.xml"), "pdf", max_results=3)
    assert [h.url for h in page.hits] == [
        "https://arxiv.org/pdf/2202.12139v1",
        "https://arxiv.org/pdf/2405.13786v1",
        "https://arxiv.org/pdf/2005.14124v2",
    ]
    assert all(h.modality is Modality.PDF for h in page.hits)


def test_empty_feed_is_an_honest_empty_page():
    page = parse(fixture_bytes("arxiv", "query-empty-feed-unknown-id.xml"))
    assert page.hits == ()
    assert page.total == 0
    assert page.error_message is None


def test_http_400_error_feed_is_a_soft_error():
    page = parse(fixture_bytes("arxiv", "query-error-malformed-id.xml"), status=400)
    assert page.hits == ()
    assert page.error_message == "arxiv: incorrect id format for abc"


def test_unsupported_expert_params_are_named_in_the_note():
    page = parse(
        fixture_bytes("arxiv", "query-empty-feed-unknown-id.xml"),
        expert_params={"language": "de", "site": "nature.com", "filetype": "pdf", "dateFrom": "2020-01-01"},
    )
    assert page.note == "ignored by this provider: language, site"


def test_a_body_that_is_not_a_feed_is_a_parse_error():
    with pytest.raises(ParseError, match="expected an Atom <feed>"):
        parse(b"<html><body>Service Unavailable</body></html>")


@pytest.mark.parametrize(
    "body", hostile_xml("feed"), ids=["billion-laughs", "external-entity", "external-dtd"]
)
def test_entity_expansion_and_external_entities_are_refused(body):
    with pytest.raises(ParseError, match="refused XML"):
        parse(body)


@settings(deadline=None)
@given(
    body=any_body(
        b"<?xml version='1.0' encoding='UTF-8'?>\n"
        b'<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>http://arxiv.org/abs/1v1</id>'
        b"<title>T</title><link href='https://arxiv.org/abs/1v1' rel='alternate'/></entry></feed>",
        b"<feed xmlns='http://www.w3.org/2005/Atom'><entry><title>Error</title>"
        b"<id>https://arxiv.org/api/errors#x</id><summary>bad</summary></entry></feed>",
    )
)
def test_any_bytes_parse_or_raise_parse_error(body):
    parses_or_refuses(parse, body)


@settings(deadline=None)
@given(data=st.data())
def test_truncated_or_garbled_real_feed_raises_only_parse_error(data):
    real = fixture_bytes("arxiv", "query-search-testing-start0-max10.xml")
    parses_or_refuses(parse, data.draw(any_body(real)))

"""PubMed: the pure esearch → esummary flow, efetch abstracts, and hostile or broken XML."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import (
    ContentInline,
    ContentRef,
    InstanceConfig,
    InvalidRequestError,
    ParseError,
    RawResponse,
    RequestSpec,
    SearchRequest,
    Secret,
)
from zarniwoop.protocols.pubmed import PROTOCOL, parse_efetch, pmid_of

from ..support.fuzz_academic import any_body, hostile_xml, parses_or_refuses
from ..support.paths import fixture_bytes

CONFIG = InstanceConfig("pubmed", "pubmed", extras={"contactEmail": "lab@example.org"})


def request(**kw):
    return SearchRequest.create("biopython", "academic", **kw)


def esearch(body: bytes, req=None, config=CONFIG):
    req = req or request()
    spec = PROTOCOL.build_request(req, config)
    return spec, PROTOCOL.parse_response(RawResponse(200, {}, body), spec, req)


def esummary(body: bytes, ids=("11850928", "11482001"), req=None):
    req = req or request()
    spec = PROTOCOL.build_request(req, CONFIG)
    summary_spec = RequestSpec("GET", spec.url, step="esummary", state={"ids": ids, "total": 2})
    return PROTOCOL.parse_response(RawResponse(200, {}, body), summary_spec, req)


def test_build_request_esearch_with_identity_dates_and_language():
    req = request(
        max_results=5, expert_params={"dateFrom": "2020-01-01", "dateTo": "2021-06-30", "language": "de"}
    )
    spec = PROTOCOL.build_request(req, CONFIG)
    assert spec.url == "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi"
    assert spec.step == "esearch"
    assert dict(spec.params) == {
        "db": "pubmed",
        "term": "(biopython) AND german[la]",
        "retstart": "0",
        "retmax": "5",
        "sort": "relevance",
        "datetype": "pdat",
        "mindate": "2020/01/01",
        "maxdate": "2021/06/30",
        "tool": "zarniwoop",
        "email": "lab@example.org",
    }


def test_api_key_is_a_query_parameter_and_never_in_the_content_reference():
    config = InstanceConfig("pubmed", "pubmed", base_url="http://127.0.0.1:9/pm", api_key=Secret("k-123"))
    spec, page = esearch(fixture_bytes("pubmed", "esearch-biopython-term.xml"), config=config)
    assert ("api_key", "k-123") in spec.params
    assert ("api_key", "k-123") in page.next_request.params
    summary = PROTOCOL.parse_response(
        RawResponse(200, {}, fixture_bytes("pubmed", "esummary-pubmed-two-ids.xml")),
        page.next_request,
        request(),
    )
    assert all("k-123" not in h.content.ref for h in summary.hits)
    assert summary.hits[0].content.ref == (
        "http://127.0.0.1:9/pm/efetch.fcgi?db=pubmed&id=11850928&retmode=xml&rettype=abstract"
    )


def test_esearch_carries_the_ids_into_the_esummary_request():
    _, page = esearch(fixture_bytes("pubmed", "esearch-biopython-term.xml"), request(max_results=3))
    assert page.hits == ()
    assert page.total == 63
    step2 = page.next_request
    assert step2.step == "esummary"
    assert step2.url == "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esummary.fcgi"
    assert dict(step2.params) == {
        "db": "pubmed",
        "id": "41282813,41148224,41011574",
        "tool": "zarniwoop",
        "email": "lab@example.org",
    }
    assert step2.state["ids"] == ("41282813", "41148224", "41011574")
    assert step2.state["total"] == 63


def test_esearch_with_no_ids_is_an_empty_page_naming_the_missing_phrase():
    _, page = esearch(fixture_bytes("pubmed", "esearch-empty-phrase-not-found-protein-db.xml"))
    assert page.hits == ()
    assert page.next_request is None
    assert page.total == 0
    assert page.note == "phrase not found: abcXYZ"
    assert page.error_message is None


def test_esearch_error_element_is_a_soft_error():
    _, page = esearch(b"<eSearchResult><ERROR>Invalid db name specified: pubmedx</ERROR></eSearchResult>")
    assert page.error_message == "pubmed: Invalid db name specified: pubmedx"


def test_esummary_hits_with_pmid_authors_venue_and_stashed_abstract():
    page = esummary(fixture_bytes("pubmed", "esummary-pubmed-two-ids.xml"))
    assert page.total == 2
    assert [h.title for h in page.hits] == [
        "Zirconium granuloma following treatment of rhus dermatitis.",
        "Adverse and beneficial effects of plant extracts on skin and skin disorders.",
    ]
    first = page.hits[0]
    assert first.url == "https://pubmed.ncbi.nlm.nih.gov/11850928/"
    assert first.snippet == "Arch Dermatol 1965 Aug;92(2):188-91"
    assert first.extras == {
        "pmid": "11850928",
        "authors": ["LoPresti PJ", "Hambrick GW Jr"],
        "year": 1965,
        "venue": "Archives of dermatology",
        "publishedAt": "1965 Aug",
        "pubTypes": ["Journal Article"],
    }
    assert first.content.inline is ContentInline.STASH_ON_DEMAND
    assert pmid_of(first.content.ref) == "11850928"
    assert page.hits[1].extras["pubTypes"] == ["Journal Article", "Review"]


def test_esummary_keeps_esearch_relevance_order():
    page = esummary(fixture_bytes("pubmed", "esummary-pubmed-two-ids.xml"), ids=("11482001", "11850928"))
    assert [h.extras["pmid"] for h in page.hits] == ["11482001", "11850928"]


def test_parse_efetch_abstracts_title_and_doi():
    articles = parse_efetch(fixture_bytes("pubmed", "efetch-pubmedarticleset-two-articles.xml"))
    assert [a.pmid for a in articles] == ["11748933", "11700088"]
    assert articles[0].title.startswith("Is cryopreservation a homogeneous process?")
    assert articles[0].text.startswith(
        "This study subdivides the cryopreservation procedure for Diplodus puntazzo"
    )
    assert "(P < 0.001)" in articles[0].text  # the &lt; entity decoded
    assert articles[0].doi == "10.1006/cryo.2001.2328"
    assert articles[1].text.startswith("The sensitivity of (13)C NMR imaging can be considerably favored")
    assert articles[1].doi == "10.1006/jmre.2001.2429"


def test_structured_abstract_keeps_its_labels_and_flattens_markup():
    body = b"""<?xml version="1.0" ?>
<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID Version="1">123</PMID><Article>
<ArticleTitle>CRISPR <i>in vivo</i></ArticleTitle><Abstract>
<AbstractText Label="BACKGROUND" NlmCategory="BACKGROUND">Cas9 cuts <i>DNA</i>.</AbstractText>
<AbstractText Label="RESULTS">Efficiency was 10<sup>3</sup> higher.</AbstractText>
</Abstract></Article></MedlineCitation></PubmedArticle></PubmedArticleSet>"""
    [article] = parse_efetch(body)
    assert article.title == "CRISPR in vivo"
    assert article.text == "BACKGROUND: Cas9 cuts DNA.\n\nRESULTS: Efficiency was 10^3 higher."
    assert PROTOCOL.content_text(body) == "CRISPR in vivo\n\n" + article.text


def test_load_content_rebuilds_efetch_against_the_configured_host_only():
    config = InstanceConfig("pubmed", "pubmed", base_url="http://127.0.0.1:9/pm")
    forged = ContentRef(
        ContentInline.STASH_ON_DEMAND, ref="http://169.254.169.254/efetch.fcgi?db=pubmed&id=42"
    )
    spec = PROTOCOL.load_content(forged, config)
    assert spec.url == "http://127.0.0.1:9/pm/efetch.fcgi"
    assert dict(spec.params)["id"] == "42"
    with pytest.raises(InvalidRequestError, match="names no PMID"):
        PROTOCOL.load_content(ContentRef(ContentInline.STASH_ON_DEMAND, ref="../../etc/passwd"), config)


def test_describe_error_takes_only_the_reason_not_the_echoed_key():
    body = b'{"error":"API key invalid","api-key":"secret-123","type":"invalid","status":"unknown"}'
    assert PROTOCOL.describe_error(RawResponse(400, {}, body)) == "API key invalid"
    xml = b"<eSearchResult><ERROR>Search Backend failed</ERROR></eSearchResult>"
    assert PROTOCOL.describe_error(RawResponse(500, {}, xml)) == "Search Backend failed"
    assert PROTOCOL.describe_error(RawResponse(502, {}, b"<html>")) is None
    assert PROTOCOL.rejects_key(RawResponse(400, {}, body)) is True
    assert PROTOCOL.rejects_key(RawResponse(400, {}, b'{"error":"Invalid uid 1x"}')) is False


@pytest.mark.parametrize(
    ("ref", "pmid"),
    [
        ("11748933", "11748933"),
        ("pubmed:11748933", "11748933"),
        ("https://eutils.ncbi.nlm.nih.gov/entrez/eutils/efetch.fcgi?db=pubmed&id=11748933", "11748933"),
        ("https://pubmed.ncbi.nlm.nih.gov/11748933/", "11748933"),
        ("not-a-pmid", None),
    ],
)
def test_pmid_of(ref, pmid):
    assert pmid_of(ref) == pmid


@pytest.mark.parametrize("root", ["eSearchResult", "eSummaryResult", "PubmedArticleSet"])
def test_entity_expansion_and_external_entities_are_refused(root):
    for body in hostile_xml(root):
        with pytest.raises(ParseError, match="refused XML"):
            esearch(body)
        with pytest.raises(ParseError, match="refused XML"):
            esummary(body)
        with pytest.raises(ParseError, match="refused XML"):
            parse_efetch(body)


@settings(deadline=None)
@given(data=st.data())
def test_every_step_raises_only_parse_error_on_broken_bodies(data):
    search = fixture_bytes("pubmed", "esearch-biopython-term.xml")
    summary = fixture_bytes("pubmed", "esummary-pubmed-two-ids.xml")
    fetched = fixture_bytes("pubmed", "efetch-pubmedarticleset-two-articles.xml")
    parses_or_refuses(esearch, data.draw(any_body(search)))
    parses_or_refuses(esummary, data.draw(any_body(summary)))
    parses_or_refuses(parse_efetch, data.draw(any_body(fetched)))
    parses_or_refuses(PROTOCOL.content_text, data.draw(any_body(fetched)))

"""Semantic Scholar: identities from externalIds, open PDFs, id-only pages, the keyless `{total}` miss."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import InstanceConfig, RawResponse, SearchRequest, Secret
from zarniwoop.protocols.semanticscholar import PROTOCOL

from ..support.fuzz_academic import survives_broken_json
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

RICH = ("semantic-scholar", "paper-search-match-title-chemistry-tools-rich-fields.json")
TITLES = ("semantic-scholar", "paper-search-sublinear-edit-distance-89-results-no-next.json")
NOTHING = ("semantic-scholar", "paper-search-no-result-term-zero-results.json")
KEYLESS = InstanceConfig("semanticscholar", "semanticscholar")


def parse(body: bytes, **kw):
    return parse_body(PROTOCOL, KEYLESS, "chemistry tools", "academic", body, **kw)


def test_build_request_names_fields_dates_and_the_optional_key():
    request = SearchRequest.create(
        "edit distance",
        "academic",
        max_results=3,
        expert_params={"dateFrom": "2020-01-01", "filetype": "pdf"},
    )
    spec = PROTOCOL.build_request(request, InstanceConfig("s2", "semanticscholar", api_key=Secret("s2-key")))
    assert spec.url == "https://api.semanticscholar.org/graph/v1/paper/search"
    params = dict(spec.params)
    assert params["query"] == "edit distance" and params["limit"] == "3"
    assert "externalIds" in params["fields"].split(",")
    assert params["publicationDateOrYear"] == "2020-01-01:"
    assert params["openAccessPdf"] == ""
    assert spec.headers["x-api-key"] == "s2-key"
    assert "x-api-key" not in PROTOCOL.build_request(request, KEYLESS).headers


def test_a_rich_paper_carries_doi_arxiv_pmid_citations_and_pdf():
    [hit] = parse(fixture_bytes(*RICH)).hits
    assert hit.title == "Augmenting large language models with chemistry tools"
    assert hit.url == "https://www.semanticscholar.org/paper/354dcdebf3f8b5feeed5c62090e0bc1f0c28db06"
    assert hit.extras["doi"] == "10.1038/s42256-024-00832-8"
    assert hit.extras["arxivId"] == "2304.05376"
    assert hit.extras["pmid"] == "38799228"
    assert hit.extras["pmcid"] == "PMC11116106"
    assert hit.extras["corpusId"] == "258059792"
    assert hit.extras["citedByCount"] == 488
    assert hit.extras["venue"] == "Nature Machine Intelligence"
    assert hit.extras["pdfUrl"] == "https://www.nature.com/articles/s42256-024-00832-8.pdf"
    assert hit.extras["authors"][:2] == ["Andrés M Bran", "Sam Cox"]


def test_title_only_papers_link_to_their_page():
    page = parse(fixture_bytes(*TITLES), max_results=100)
    assert page.total == 89 and len(page.hits) == 89
    assert page.hits[0].title == "Near-optimal sublinear time algorithms for Ulam distance"
    assert (
        page.hits[0].url == "https://www.semanticscholar.org/paper/169a66a031488ce0c8fdd70502945dbf69b045a5"
    )


def test_no_data_key_is_an_honest_miss_and_errors_are_soft():
    page = parse(fixture_bytes(*NOTHING))
    assert page.hits == () and page.total == 0 and page.error_message is None
    assert parse(b'{"error": "Unrecognized or unsupported fields: [tldrs]"}').error_message == (
        "semanticscholar: Unrecognized or unsupported fields: [tldrs]"
    )
    too_many = (
        b'{"message": "Too Many Requests. Please wait and try again or apply for a key", "code": "429"}'
    )
    assert PROTOCOL.describe_error(RawResponse(429, {}, too_many)).startswith("Too Many Requests")


@settings(deadline=None)
@given(data=st.data())
def test_broken_bodies_raise_only_parse_error(data):
    survives_broken_json(parse, data, fixture_bytes(*RICH))

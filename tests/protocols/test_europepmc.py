"""Europe PMC: core records with abstracts and PMID/PMCID/DOI identities, lite records, no match."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import InstanceConfig, SearchRequest
from zarniwoop.protocols.europepmc import PROTOCOL

from ..support.fuzz_academic import survives_broken_json
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

CORE = ("europepmc", "search-cancer-resulttype-core-pagesize-25.json")
LITE = ("europepmc", "search-cancer-lite-pagesize-5.json")
NOTHING = ("europepmc", "search-gibberish-zero-results.json")
CONFIG = InstanceConfig("europepmc", "europepmc")


def parse(body: bytes, **kw):
    return parse_body(PROTOCOL, CONFIG, "cancer", "academic", body, **kw)


def test_build_request_asks_for_json_core_records_and_dates_in_the_query():
    request = SearchRequest.create(
        "malaria", "academic", max_results=7, expert_params={"dateFrom": "2020-01-01"}
    )
    spec = PROTOCOL.build_request(request, CONFIG)
    assert spec.url == "https://www.ebi.ac.uk/europepmc/webservices/rest/search"
    assert dict(spec.params) == {
        "query": "(malaria) AND FIRST_PDATE:[2020-01-01 TO 3000-12-31]",
        "format": "json",
        "resultType": "core",
        "pageSize": "7",
        "cursorMark": "*",
    }


def test_core_records_have_identities_abstract_authors_and_a_free_pdf():
    page = parse(fixture_bytes(*CORE), max_results=25)
    assert page.total == 5059039
    first, second = page.hits[:2]
    assert first.title == (
        "Abscopal response in a patient with fibrolamellar hepatocellular carcinoma following radiotherapy"
    )
    assert first.url == "https://europepmc.org/article/MED/39709209"
    assert first.extras["pmid"] == "39709209"
    assert first.extras["doi"] == "10.1016/s0140-6736(24)02600-x"
    assert first.extras["authors"][:2] == ["Schoenfeld JD", "Haas-Kogan DA"]
    assert (first.extras["year"], first.extras["venue"]) == (2025, "Lancet (London, England)")
    assert second.extras["pmcid"] == "PMC12124214"
    assert second.extras["pdfUrl"] == "https://europepmc.org/articles/PMC12124214?pdf=render"
    flexibility = next(h for h in page.hits if h.title.startswith("The role of psychological flexibility"))
    assert flexibility.content.text.startswith(
        "Objective This study investigated whether psychological flexibility, the key construct"
    )
    assert all("<h4>" not in h.content.text for h in page.hits if h.content is not None)


def test_lite_records_read_the_author_string():
    first = parse(fixture_bytes(*LITE)).hits[0]
    assert first.extras["authors"] == ["Schoenfeld JD", "Haas-Kogan DA", "O'Neill AF"]
    assert first.extras["venue"] == "Lancet"
    assert first.content is None


def test_no_match_and_an_error_body():
    page = parse(fixture_bytes(*NOTHING))
    assert page.hits == () and page.total == 0
    assert parse(b'{"errMsg": "Invalid query syntax"}').error_message == "europepmc: Invalid query syntax"


@settings(deadline=None)
@given(data=st.data())
def test_broken_bodies_raise_only_parse_error(data):
    survives_broken_json(parse, data, fixture_bytes(*LITE))

"""Crossref: the works envelope, JATS abstracts, dates as date-parts, the polite pool, failures."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import InstanceConfig, RawResponse, SearchRequest
from zarniwoop.protocols.crossref import PROTOCOL

from ..support.fuzz_academic import survives_broken_json
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

BOETTIGER = ("crossref", "works-query-ecology-query-author-boettiger-20-items.json")
ROWS_2 = ("crossref", "works-query-ecology-rows-2.json")
NOTHING = ("crossref", "works-query-title-gibberish-rows-1-zero-results.json")
CONFIG = InstanceConfig("crossref", "crossref", extras={"contactEmail": "lab@example.org"})


def parse(body: bytes, **kw):
    return parse_body(PROTOCOL, CONFIG, "ecology", "academic", body, **kw)


def test_build_request_selects_fields_filters_dates_and_joins_the_polite_pool():
    request = SearchRequest.create(
        "forecast trap",
        "academic",
        max_results=5,
        expert_params={"dateFrom": "2020-01-01", "dateTo": "2023-06-30"},
    )
    spec = PROTOCOL.build_request(request, CONFIG)
    assert spec.url == "https://api.crossref.org/works"
    params = dict(spec.params)
    assert params["query"] == "forecast trap" and params["rows"] == "5"
    assert params["filter"] == "from-pub-date:2020-01-01,until-pub-date:2023-06-30"
    assert params["mailto"] == "lab@example.org"
    assert "DOI" in params["select"].split(",")
    assert spec.headers["User-Agent"].endswith("; mailto:lab@example.org)")


def test_works_with_doi_authors_year_venue_citations_and_pdf():
    page = parse(fixture_bytes(*BOETTIGER), max_results=20)
    assert page.total == 1253 and len(page.hits) == 20
    first = page.hits[0]
    assert (first.title, first.url) == ("The forecast trap", "https://doi.org/10.1111/ele.14024")
    assert first.extras == {
        "doi": "10.1111/ele.14024",
        "authors": ["Carl Boettiger"],
        "year": 2022,
        "venue": "Ecology Letters",
        "citedByCount": 26,
        "pdfUrl": "https://onlinelibrary.wiley.com/doi/pdf/10.1111/ele.14024",
        "publisher": "Wiley",
        "type": "journal-article",
    }
    assert page.hits[1].title.startswith("From noise to knowledge: how randomness generates novel phenomena")


def test_abstracts_lose_their_markup():
    first = parse(fixture_bytes(*ROWS_2)).hits[0]
    assert first.title == "Communicating Ecology"
    assert first.content.text.startswith(
        "Communication is perhaps the most important, but least formally discussed"
    )
    assert "<p>" not in first.content.text
    jats = {
        "status": "ok",
        "message": {
            "items": [
                {
                    "DOI": "10.1/x",
                    "title": ["T"],
                    "abstract": "<jats:title>Abstract</jats:title><jats:p>First.</jats:p><jats:p>Second.</jats:p>",
                }
            ]
        },
    }
    [hit] = parse(json.dumps(jats).encode()).hits
    assert hit.content.text == "First. Second."
    assert hit.url == "https://doi.org/10.1/x"


def test_no_match_and_failures():
    page = parse(fixture_bytes(*NOTHING))
    assert page.hits == () and page.total == 0
    failed = b'{"status": "failed", "message-type": "validation-failure", "message": [{"type": "parameter-not-allowed", "value": "bogus", "message": "This route does not support bogus"}]}'
    assert parse(failed).error_message == "crossref: This route does not support bogus"
    assert PROTOCOL.describe_error(RawResponse(400, {}, failed)) == "This route does not support bogus"


@settings(deadline=None)
@given(data=st.data())
def test_broken_bodies_raise_only_parse_error(data):
    survives_broken_json(parse, data, fixture_bytes(*ROWS_2))

"""Open Library: request building and the recorded `search.json` bodies."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import InstanceConfig, Modality, ParseError, SearchRequest
from zarniwoop.protocols.openlibrary import FIELDS, PROTOCOL

from ..support.fuzz_academic import survives_broken_json
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

CONFIG = InstanceConfig("openlibrary", "openlibrary")


def parse(body: bytes, **kw):
    return parse_body(PROTOCOL, CONFIG, "time war", "book", body, **kw)


def test_build_request_with_year_range_and_marc_language():
    request = SearchRequest.create(
        "lose the time war", "book", max_results=5, expert_params={"dateFrom": "2015-01-01", "language": "en"}
    )
    spec = PROTOCOL.build_request(
        request, InstanceConfig("ol", "openlibrary", base_url="http://127.0.0.1:9/ol")
    )
    assert spec.url == "http://127.0.0.1:9/ol/search.json"
    assert dict(spec.params) == {
        "q": "lose the time war first_publish_year:[2015 TO *]",
        "limit": "5",
        "page": "1",
        "fields": FIELDS,
        "language": "eng",
    }


def test_time_war_2020_body_two_works_with_authors_isbn_and_cover():
    page = parse(fixture_bytes("openlibrary", "search-time-war-2020.json"))
    assert page.total == 2
    assert [h.title for h in page.hits] == [
        "This Is How You Lose the Time War",
        "This is How You Lose the Time War",
    ]
    first, second = page.hits
    assert first.url == "https://openlibrary.org/works/OL20639540W"
    assert first.modality is Modality.BOOK
    assert first.snippet == "by Amal El-Mohtar, Max Gladstone (2019)"
    assert first.extras["authors"] == ["Amal El-Mohtar", "Max Gladstone"]
    assert first.extras["firstPublishYear"] == 2019
    assert first.extras["isbn"] == "9781534431003"
    assert first.extras["isbns"] == ["9781534431003", "1534431004"]
    assert first.extras["workId"] == "OL20639540W"
    assert "thumbnailUrl" not in first.extras  # no cover_i on this doc
    assert second.extras["thumbnailUrl"] == "https://covers.openlibrary.org/b/id/8665647-M.jpg"
    assert "firstPublishYear" not in second.extras
    assert "isbn" not in second.extras


def test_denver_2021_body_hundred_docs_some_without_cover_or_author():
    body = fixture_bytes("openlibrary", "search-q-denver-co-2021-100-docs.json")
    page = parse(body, max_results=100)
    assert page.total == 35992
    docs = json.loads(body)["docs"]
    assert len(page.hits) == 100 == len(docs)
    assert page.hits[0].title == "Denver, Co"
    assert page.hits[0].url == "https://openlibrary.org/works/OL8503198W"
    assert page.hits[0].extras["isbn"] == "9780762507849"
    assert page.hits[1].extras["thumbnailUrl"] == "https://covers.openlibrary.org/b/id/1847337-M.jpg"
    assert sum("thumbnailUrl" in h.extras for h in page.hits) == 42  # SOURCES.md: 58/100 lack cover_i
    assert sum("authors" not in h.extras for h in page.hits) == 4
    assert sum("firstPublishYear" not in h.extras for h in page.hits) == 1


def test_max_results_cuts_the_page():
    page = parse(fixture_bytes("openlibrary", "search-q-denver-co-2021-100-docs.json"), max_results=3)
    assert len(page.hits) == 3


def test_unsupported_expert_params_are_named():
    page = parse(
        fixture_bytes("openlibrary", "search-time-war-2020.json"),
        expert_params={"site": "example.org", "language": "xx", "dateTo": "2020-01-01"},
    )
    assert page.note == "ignored by this provider: language, site"


def test_error_body_is_soft_and_junk_is_parse_error():
    assert parse(b'{"error": "query too long"}').error_message == "openlibrary: query too long"
    with pytest.raises(ParseError):
        parse(b"<html>503</html>")
    with pytest.raises(ParseError):
        parse(b'{"docs": {"not": "a list"}}')


@settings(deadline=None)
@given(data=st.data())
def test_broken_bodies_raise_only_parse_error(data):
    survives_broken_json(parse, data, fixture_bytes("openlibrary", "search-time-war-2020.json"))

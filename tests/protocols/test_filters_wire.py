"""Issue 47, paging on the protocols without a three-page emulator test: a page's `next_page` is the
position the wire counts in, and a resumed request asks for it. The filters each wire takes are
checked on what the emulator received (`tests/dispatch/test_filters_on_the_wire.py`)."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest

from zarniwoop.contract.filters import PageResume
from zarniwoop.contract.protocol import InstanceConfig, RawResponse, protocol_filters
from zarniwoop.contract.query import SearchRequest
from zarniwoop.protocols import load_protocols

TODAY = date(2026, 3, 15)
PROTOCOLS = load_protocols()


def _request(modality: str, resume: dict[str, str] | None = None, instance: str = "x") -> SearchRequest:
    request = SearchRequest.create("graphene", modality, max_results=5).on(TODAY)
    if resume is not None:
        from dataclasses import replace

        request = replace(request, resume=PageResume(instance, tuple(sorted(resume.items()))))
    return request


def _spec(protocol_id: str, request: SearchRequest, **extras: str) -> Any:
    config = InstanceConfig(instance_id=protocol_id, protocol_id=protocol_id, extras=extras)
    return PROTOCOLS[protocol_id].build_request(request, config)


RESUMES = [
    # protocol, modality, the position a cursor carries, the wire parameters a resumed request sends
    ("hackernews", "news", {"page": "2"}, {"page": "2"}),
    ("openlibrary", "book", {"page": "3"}, {"page": "3"}),
    ("peertube", "video", {"offset": "10"}, {"start": "10"}),
    ("crossref", "academic", {"offset": "20"}, {"offset": "20"}),
    ("europepmc", "academic", {"cursor": "AoE/abc"}, {"cursorMark": "AoE/abc"}),
    ("semanticscholar", "academic", {"offset": "5"}, {"offset": "5"}),
    ("pubmed", "academic", {"offset": "5"}, {"retstart": "5"}),
    ("github", "code", {"page": "2"}, {"page": "2"}),
    ("wikipedia", "encyclopedia", {"offset": "5"}, {"sroffset": "5", "list": "search"}),
    ("nominatim", "map", {"shown": "7,8"}, {"exclude_place_ids": "7,8"}),
]


@pytest.mark.parametrize(("protocol", "modality", "resume", "wire"), RESUMES, ids=[c[0] for c in RESUMES])
def test_a_resumed_request_asks_for_the_page_in_the_wires_terms(protocol, modality, resume, wire):
    spec = _spec(protocol, _request(modality, resume))
    params = dict(spec.params)
    assert {k: params.get(k) for k in wire} == wire
    assert "page" in spec.state.get("honoured", ())
    assert "page" in protocol_filters(PROTOCOLS[protocol])  # strictFilters relies on the declaration


def _parse(protocol_id: str, request: SearchRequest, body: Any, spec: Any = None) -> Any:
    spec = spec or _spec(protocol_id, request)
    raw = RawResponse(200, {"Content-Type": "application/json"}, json.dumps(body).encode())
    return PROTOCOLS[protocol_id].parse_response(raw, spec, request)


def test_next_pages_in_each_wires_terms():
    hn = _parse(
        "hackernews",
        _request("news"),
        {"hits": [{"objectID": "1", "title": "t", "url": "https://a.org"}], "nbPages": 3},
    )
    assert hn.next_page == {"page": "1"}
    last = _request("news", {"page": "2"})
    assert (
        _parse(
            "hackernews",
            last,
            {"hits": [{"objectID": "1", "title": "t", "url": "https://a.org"}], "nbPages": 3},
        ).next_page
        is None
    )
    s2 = _parse(
        "semanticscholar",
        _request("academic"),
        {
            "total": 50,
            "offset": 0,
            "next": 5,
            "data": [{"paperId": "p", "title": "T", "url": "https://s.org/p"}],
        },
    )
    assert s2.next_page == {"offset": "5"}
    epmc = {
        "hitCount": 9,
        "nextCursorMark": "AoE/next",
        "resultList": {"result": [{"id": "1", "source": "MED", "title": "T", "pmid": "1"}]},
    }
    assert _parse("europepmc", _request("academic"), epmc).next_page == {"cursor": "AoE/next"}


@pytest.mark.parametrize("protocol", ["tavily", "exa"])
def test_a_wire_without_offset_or_cursor_declares_no_page_and_offers_none(protocol):
    """Tavily's and Exa's `/search` take a result count and nothing that says where to start."""
    assert "page" not in protocol_filters(PROTOCOLS[protocol])
    body = {"results": [{"url": "https://a.org/1", "title": "t", "content": "c", "text": "c"}]}
    assert _parse(protocol, _request("web"), body).next_page is None

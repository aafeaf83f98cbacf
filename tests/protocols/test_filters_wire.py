"""Issue 47 on the protocols whose emulator tests live elsewhere: each `build_request` puts the filters
its wire takes where its documentation says (and names them honoured); a page's `next_page` is the
position the wire counts in, and a resumed request asks for it. What a wire cannot express is left
out of `honoured`, so the dispatcher reports it in `ignoredParams` (`tests/dispatch/test_filters.py`)."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest

from zarniwoop.contract.filters import PageResume, SearchFilters
from zarniwoop.contract.protocol import InstanceConfig, RawResponse, protocol_filters
from zarniwoop.contract.query import SearchRequest
from zarniwoop.protocols import load_protocols

TODAY = date(2026, 3, 15)
PROTOCOLS = load_protocols()


def _request(
    modality: str, resume: dict[str, str] | None = None, instance: str = "x", **filters: Any
) -> SearchRequest:
    request = SearchRequest.create(
        "graphene", modality, max_results=5, filters=SearchFilters.create(**filters)
    )
    request = request.on(TODAY)
    if resume is not None:
        from dataclasses import replace

        request = replace(request, resume=PageResume(instance, tuple(sorted(resume.items()))))
    return request


def _spec(protocol_id: str, request: SearchRequest, **extras: str) -> Any:
    config = InstanceConfig(instance_id=protocol_id, protocol_id=protocol_id, extras=extras)
    return PROTOCOLS[protocol_id].build_request(request, config)


CASES = [
    # protocol, modality, filters, resume, the wire parameters expected (a subset), honoured
    (
        "hackernews",
        "news",
        {"time_range": "week"},
        {"page": "2"},
        {"numericFilters": "created_at_i>=1772928000", "page": "2"},
        ["page", "timeRange"],
    ),
    ("openlibrary", "book", {}, {"page": "3"}, {"page": "3"}, ["page"]),
    (
        "peertube",
        "video",
        {"time_range": "month"},
        {"offset": "10"},
        {"startDate": "2026-02-12T00:00:00Z", "start": "10"},
        ["page", "timeRange"],
    ),
    (
        "nominatim",
        "map",
        {"region": "FR", "language": "fr"},
        None,
        {"countrycodes": "fr", "accept-language": "fr"},
        ["language", "region"],
    ),
    (
        "gdelt",
        "news",
        {"time_range": "day", "exclude_domains": ["example.com"]},
        None,
        {"timespan": "1d", "query": "graphene -domain:example.com"},
        ["dateFrom", "dateTo", "excludeDomains", "timeRange"],
    ),
    (
        "crossref",
        "academic",
        {"time_range": "year"},
        {"offset": "20"},
        {"filter": "from-pub-date:2025-03-14", "offset": "20"},
        ["page", "timeRange"],
    ),
    (
        "europepmc",
        "academic",
        {"time_range": "week"},
        {"cursor": "AoE/abc"},
        {"query": "(graphene) AND FIRST_PDATE:[2026-03-08 TO 3000-12-31]", "cursorMark": "AoE/abc"},
        ["page", "timeRange"],
    ),
    (
        "semanticscholar",
        "academic",
        {"time_range": "year"},
        {"offset": "5"},
        {"publicationDateOrYear": "2025-03-14:", "offset": "5"},
        ["page", "timeRange"],
    ),
    (
        "pubmed",
        "academic",
        {"time_range": "month"},
        {"offset": "5"},
        {"datetype": "pdat", "reldate": "31", "retstart": "5"},
        ["page", "timeRange"],
    ),
    (
        "github",
        "code",
        {"time_range": "week"},
        {"page": "2"},
        {"q": "graphene pushed:>=2026-03-08", "page": "2"},
        ["page", "timeRange"],
    ),
]


@pytest.mark.parametrize(
    ("protocol", "modality", "filters", "resume", "wire", "honoured"), CASES, ids=[c[0] for c in CASES]
)
def test_filters_reach_the_wire(protocol, modality, filters, resume, wire, honoured):
    spec = _spec(protocol, _request(modality, resume, **filters))
    params = dict(spec.params)
    assert {k: params.get(k) for k in wire} == wire
    assert sorted(spec.state.get("honoured", ())) == honoured
    # what the wire took is what the protocol declares it can take (strictFilters relies on it)
    declared = protocol_filters(PROTOCOLS[protocol])
    assert {h for h in honoured if h not in ("dateFrom", "dateTo")} <= declared


def test_wikipedia_declares_no_filter_and_honours_none():
    spec = _spec("wikipedia", _request("encyclopedia", time_range="week", exclude_domains=["x.org"]))
    assert protocol_filters(PROTOCOLS["wikipedia"]) == frozenset()
    assert "honoured" not in spec.state


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

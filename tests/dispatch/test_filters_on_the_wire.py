"""Each protocol's wire, through the real runtime against its loopback emulator (issue 47).

A search with filters goes through the dispatcher; the query the emulator RECEIVED is compared with
the parameters the provider's documentation names for each filter, and what the wire cannot express
is in `ignoredParams` with the reason, or — domain filters — applied to the hits (the counting is
`test_filters.py::test_exclude_domains_on_a_wire_without_them_drops_the_hits_and_counts_them`).
Paging in each wire's terms: `tests/protocols/test_filters_wire.py` and the three-page tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from zarniwoop.contract.filters import DOMAIN_FILTERS, SearchFilters
from zarniwoop.contract.protocol import protocol_filters
from zarniwoop.contract.query import SearchRequest, SearchScope
from zarniwoop.limits.clock import utc_date
from zarniwoop.protocols import load_protocols

from ..support import providers_academic as academic
from ..support import providers_open as open_apis
from ..support.bodies import openalex_works, searxng_page
from ..support.emulator import Emulator
from ..support.providers_web import KEYS, mount_brave, mount_exa, mount_searxng, mount_serper, mount_tavily
from ..support.runtime import cascade, endpoint, open_runtime

pytestmark = pytest.mark.anyio

FILTERS = SearchFilters.create(
    exclude_domains=["wikipedia.org"], time_range="week", safe_search="strict", region="DE"
)
HIT = {"title": "A page", "url": "https://example.org/a"}
NOT_SAFE = ["safeSearch", "region"]
"""Reported ignored by a wire that expresses the time range and no more of `FILTERS`."""

QUERY_WIRES: dict[str, tuple[str, Callable[[Emulator], str], str, dict[str, str], list[str]]] = {
    # protocol: modality, emulator route, path, the filters' parameters as documented, ignored
    "github": (  # the `pushed:` qualifier of GitHub's search syntax
        "code",
        lambda emu: open_apis.add_github(emu, token="ghp_wire"),
        "/github/search/repositories",
        {"q": "crispr pushed:>={since}"},
        NOT_SAFE,
    ),
    "crossref": (
        "academic",
        open_apis.add_crossref,
        "/crossref/works",
        {"filter": "from-pub-date:{since}"},
        NOT_SAFE,
    ),
    "europepmc": (  # a search field in the query; the cursor starts at `*`
        "academic",
        open_apis.add_europepmc,
        "/europepmc/search",
        {"query": "(crispr) AND FIRST_PDATE:[{since} TO 3000-12-31]", "cursorMark": "*"},
        NOT_SAFE,
    ),
    "semanticscholar": (  # an open-ended `from:` range
        "academic",
        open_apis.add_semanticscholar,
        "/s2/graph/v1/paper/search",
        {"publicationDateOrYear": "{since}:"},
        NOT_SAFE,
    ),
    "pubmed": (  # E-utilities: days back from today on the publication date
        "academic",
        academic.add_pubmed,
        "/pubmed/esearch.fcgi",
        {"datetype": "pdat", "reldate": "7", "retstart": "0"},
        NOT_SAFE,
    ),
    "openlibrary": (
        "book",
        academic.add_openlibrary,
        "/openlibrary/search.json",
        {"page": "1"},
        ["timeRange", *NOT_SAFE],
    ),
    "gdelt": (  # DOC 2.0: `-domain:` in the query, `timespan` in weeks
        "news",
        open_apis.add_gdelt,
        "/gdelt/api/v2/doc/doc",
        {"query": "crispr -domain:wikipedia.org", "timespan": "1w"},
        NOT_SAFE,
    ),
    "hackernews": (  # Algolia: a numeric filter on the creation time, newest first, page 0
        "news",
        academic.add_hackernews,
        "/hn/api/v1/search_by_date",
        {"numericFilters": "created_at_i>={since_epoch}", "page": "0"},
        NOT_SAFE,
    ),
    "peertube": (
        "video",
        open_apis.add_peertube,
        "/peertube/api/v1/search/videos",
        {"startDate": "{since}T00:00:00Z", "start": "0"},
        NOT_SAFE,
    ),
    "nominatim": (  # searched with `language` too (LOCAL_FILTERS)
        "map",
        open_apis.add_nominatim,
        "/nominatim/search",
        {"countrycodes": "de", "accept-language": "de"},
        ["timeRange", "safeSearch"],
    ),
    # no filter on these wires: the query goes as typed, every filter reported (domains post-filtered)
    "stackexchange": (
        "code",
        open_apis.add_stackexchange,
        "/stackexchange/2.3/search/advanced",
        {"q": "crispr"},
        ["timeRange", *NOT_SAFE],
    ),
    "commons": (
        "image",
        open_apis.add_commons,
        "/commons/w/api.php",
        {"gsrsearch": "crispr filetype:bitmap|drawing"},
        ["timeRange", *NOT_SAFE],
    ),
    "wikipedia": (
        "web",
        academic.add_wikipedia,
        "/wiki/w/rest.php/v1/search/page",
        {"q": "crispr"},
        ["timeRange", *NOT_SAFE],
    ),
}
LOCAL_FILTERS = {
    "nominatim": SearchFilters.create(
        exclude_domains=["wikipedia.org"], time_range="week", safe_search="strict", region="DE", language="de"
    )
}


KEYED_WIRES: dict[str, tuple[Callable[..., str], dict[str, Any], str]] = {
    # protocol: emulator route, its bodies by route, the path searched under the prefix
    "brave": (
        mount_brave,
        {"/res/v1/web/search": {"type": "search", "web": {"results": [HIT]}}},
        "/res/v1/web/search",
    ),
    "serper": (
        mount_serper,
        {"/search": {"searchParameters": {}, "organic": [{**HIT, "link": HIT["url"]}]}},
        "/search",
    ),
    "tavily": (mount_tavily, {"general": {"query": "q", "results": [{**HIT, "content": "c"}]}}, "/search"),
    "exa": (mount_exa, {"": {"results": [HIT]}}, "/search"),
}


def _json(data: Any) -> bytes:
    return json.dumps(data).encode()


def _mount(emulator: Emulator, protocol: str) -> tuple[dict[str, Any], str, str]:
    """Settings for `protocol`'s endpoint on the emulator, the modality searched, the path it answers on."""
    if protocol in QUERY_WIRES:
        modality, mount, path, _, _ = QUERY_WIRES[protocol]
        key = {"apiKey": "ghp_wire"} if protocol == "github" else {}
        return endpoint(protocol, protocol, mount(emulator), enabled=True, **key), modality, path
    if protocol == "searxng":
        return (
            endpoint("searxng", "searxng", mount_searxng(emulator, {"general": searxng_page(1)})),
            "web",
            "/searxng/search",
        )
    if protocol in KEYED_WIRES:
        mount, bodies, path = KEYED_WIRES[protocol]
        base = mount(emulator, {route: _json(body) for route, body in bodies.items()})
        settings = endpoint(protocol, protocol, base, apiKey=KEYS[protocol], enabled=True)
        return settings, "web", f"/{protocol}{path}"
    if protocol == "openalex":
        base = academic.add_openalex(emulator, body=lambda _r: _json(openalex_works(2)))
        return endpoint("openalex", "openalex", base, enabled=True), "academic", "/openalex/works"
    base = academic.add_arxiv(emulator)
    return endpoint("arxiv", "arxiv", base, enabled=True), "academic", "/arxiv/api/query"


def _wire(protocol: str, received: Any, since: str, today: str) -> tuple[dict[str, Any], list[str]]:
    """What reached the wire (the filters' part of it) and the filters reported ignored."""
    if protocol in QUERY_WIRES:
        _, _, _, params, ignored = QUERY_WIRES[protocol]
        return {k: received.param(k) for k in params}, ignored
    if protocol == "searxng":
        return {k: received.param(k) for k in ("q", "time_range", "safesearch")}, ["region"]
    if protocol == "brave":
        return {k: received.param(k) for k in ("q", "freshness", "safesearch", "country")}, []
    body = received.json()
    if protocol == "serper":
        return {k: body.get(k) for k in ("q", "tbs", "gl")}, ["safeSearch"]
    if protocol == "tavily":
        return {k: body.get(k) for k in ("exclude_domains", "time_range")}, ["safeSearch", "region"]
    if protocol == "exa":
        return {k: body.get(k) for k in ("excludeDomains", "startPublishedDate")}, ["safeSearch", "region"]
    if protocol == "openalex":
        return {"filter": received.param("filter")}, ["safeSearch", "region"]
    return {"search_query": received.param("search_query")}, ["safeSearch", "region"]


EXPECTED = {
    "searxng": {"q": "crispr -site:wikipedia.org", "time_range": "week", "safesearch": "2"},
    "brave": {"q": "crispr -site:wikipedia.org", "freshness": "pw", "safesearch": "strict", "country": "de"},
    "serper": {"q": "crispr -site:wikipedia.org", "tbs": "qdr:w", "gl": "de"},
    "tavily": {"exclude_domains": ["wikipedia.org"], "time_range": "week"},
    "exa": {"excludeDomains": ["wikipedia.org"], "startPublishedDate": "{since}"},
    "openalex": {"filter": "from_publication_date:{since}"},
    "arxiv": {"search_query": "(all:crispr) AND submittedDate:[{since_compact}0000 TO {today_compact}2359]"},
    **{protocol: wire[3] for protocol, wire in QUERY_WIRES.items()},
}
PROTOCOLS = load_protocols()


@pytest.mark.parametrize("protocol", sorted(EXPECTED))
async def test_the_filters_a_wire_supports_reach_it_and_the_rest_are_reported(tmp_path, emulator, protocol):
    settings, modality, path = _mount(emulator, protocol)
    async with await open_runtime(tmp_path, cascade(modality, settings)) as rt:
        filters = LOCAL_FILTERS.get(protocol, FILTERS)
        request = SearchRequest.create("crispr", modality, filters=filters)
        result = await rt.dispatcher.search(request, SearchScope())
        today = utc_date(rt.dispatcher.clock.now())
    assert result.provider_instance_id == protocol, result.error_message
    since = (today - timedelta(days=7)).isoformat()
    [received] = emulator.requests(path)
    wire, ignored = _wire(protocol, received, since, today.isoformat())
    midnight = datetime.fromisoformat(since).replace(tzinfo=UTC)
    expected = json.loads(
        json.dumps(EXPECTED[protocol])
        .replace("{since_epoch}", str(int(midnight.timestamp())))
        .replace("{since}", since)
        .replace("{since_compact}", since.replace("-", ""))
        .replace("{today_compact}", today.isoformat().replace("-", ""))
    )
    assert wire == expected
    assert [p.param for p in result.ignored_params] == ignored
    assert all(protocol in p.reason for p in result.ignored_params)
    # what the wire took it declares (strictFilters relies on it); excluded domains never come back
    assert (result.honoured or frozenset()) - {"dateFrom", "dateTo"} <= protocol_filters(PROTOCOLS[protocol])
    honoured_or_reported = {*(result.honoured or ()), *ignored, *DOMAIN_FILTERS}
    assert set(filters.requested()) <= honoured_or_reported
    assert not [h.url for h in result.hits if "wikipedia.org" in h.url.split("/")[2]]

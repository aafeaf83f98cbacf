"""Search filters through the real runtime against the loopback emulators (issue 47).

What each wire received is compared with the parameters its documentation names; what it cannot
express is in `ignoredParams`, or — domain filters — applied to the hits, the dropped ones counted
with their reason. Also: `strictFilters` skipping a candidate, the cache and coalescing keys, profile
default filters, and cursors refused naming `page`.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from zarniwoop.contract.errors import InvalidRequestError
from zarniwoop.contract.filters import SearchFilters
from zarniwoop.contract.query import SearchRequest, SearchScope
from zarniwoop.limits.clock import utc_date

from ..support.bodies import openalex_works, searxng_page
from ..support.emulator import Emulator
from ..support.providers_academic import add_arxiv, add_openalex, add_wikipedia
from ..support.providers_web import KEYS, mount_brave, mount_exa, mount_searxng, mount_serper, mount_tavily
from ..support.runtime import cascade, endpoint, open_runtime

pytestmark = pytest.mark.anyio

FILTERS = SearchFilters.create(
    exclude_domains=["wikipedia.org"], time_range="week", safe_search="strict", region="DE"
)
HIT = {"title": "A page", "url": "https://example.org/a"}


def _json(data: Any) -> bytes:
    return json.dumps(data).encode()


def _mount(emulator: Emulator, protocol: str) -> tuple[dict[str, Any], str, str]:
    """Settings for `protocol`'s endpoint on the emulator, the modality searched, the path it answers on."""
    if protocol == "searxng":
        return (
            endpoint("searxng", "searxng", mount_searxng(emulator, {"general": searxng_page(1)})),
            "web",
            "/searxng/search",
        )
    if protocol == "brave":
        base = mount_brave(
            emulator, {"/res/v1/web/search": _json({"type": "search", "web": {"results": [HIT]}})}
        )
        return (
            endpoint("brave", "brave", base, apiKey=KEYS["brave"], enabled=True),
            "web",
            "/brave/res/v1/web/search",
        )
    if protocol == "serper":
        base = mount_serper(
            emulator, {"/search": _json({"searchParameters": {}, "organic": [{**HIT, "link": HIT["url"]}]})}
        )
        return (
            endpoint("serper", "serper", base, apiKey=KEYS["serper"], enabled=True),
            "web",
            "/serper/search",
        )
    if protocol == "tavily":
        base = mount_tavily(
            emulator, {"general": _json({"query": "q", "results": [{**HIT, "content": "c"}]})}
        )
        return (
            endpoint("tavily", "tavily", base, apiKey=KEYS["tavily"], enabled=True),
            "web",
            "/tavily/search",
        )
    if protocol == "exa":
        base = mount_exa(emulator, {"": _json({"results": [HIT]})})
        return endpoint("exa", "exa", base, apiKey=KEYS["exa"], enabled=True), "web", "/exa/search"
    if protocol == "openalex":
        base = add_openalex(emulator, body=lambda _r: _json(openalex_works(2)))
        return endpoint("openalex", "openalex", base, enabled=True), "academic", "/openalex/works"
    base = add_arxiv(emulator)
    return endpoint("arxiv", "arxiv", base, enabled=True), "academic", "/arxiv/api/query"


def _wire(protocol: str, received: Any, since: str, today: str) -> tuple[dict[str, Any], list[str]]:
    """What reached the wire (the filters' part of it) and the filters reported ignored."""
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
}


@pytest.mark.parametrize("protocol", sorted(EXPECTED))
async def test_the_filters_a_wire_supports_reach_it_and_the_rest_are_reported(tmp_path, emulator, protocol):
    settings, modality, path = _mount(emulator, protocol)
    async with await open_runtime(tmp_path, cascade(modality, settings)) as rt:
        request = SearchRequest.create("crispr", modality, filters=FILTERS)
        result = await rt.dispatcher.search(request, SearchScope())
        today = utc_date(rt.dispatcher.clock.now())
    assert result.provider_instance_id == protocol, result.error_message
    since = (today - timedelta(days=7)).isoformat()
    [received] = emulator.requests(path)
    wire, ignored = _wire(protocol, received, since, today.isoformat())
    expected = json.loads(
        json.dumps(EXPECTED[protocol])
        .replace("{since}", since)
        .replace("{since_compact}", since.replace("-", ""))
        .replace("{today_compact}", today.isoformat().replace("-", ""))
    )
    assert wire == expected
    assert [p.param for p in result.ignored_params] == ignored
    assert all(protocol in p.reason for p in result.ignored_params)


async def test_exclude_domains_on_a_wire_without_them_drops_the_hits_and_counts_them(tmp_path, emulator):
    works = openalex_works(4)
    for work, host in zip(
        works["results"], ("en.wikipedia.org", "example.org", "wikipedia.org", "nature.com"), strict=True
    ):
        work["doi"] = None
        work["primary_location"]["landing_page_url"] = f"https://{host}/{work['id'][-2:]}"
    base = add_openalex(emulator, body=lambda _r: _json(works))
    async with await open_runtime(
        tmp_path, cascade("academic", endpoint("openalex", "openalex", base, enabled=True))
    ) as rt:
        filters = SearchFilters.create(exclude_domains=["wikipedia.org"])
        result = await rt.dispatcher.search(
            SearchRequest.create("q", "academic", filters=filters), SearchScope()
        )
    assert [h.url.split("/")[2] for h in result.hits] == ["example.org", "nature.com"]
    assert result.dropped_count == 2
    assert dict(result.dropped_reasons) == {"excludeDomains": 2}
    assert "excludeDomains applied to the hits (openalex cannot express it): 2 dropped" in (result.note or "")
    assert "filter" not in emulator.requests("/openalex/works")[0].query  # nothing of it on the wire
    assert result.to_json()["droppedReasons"] == {"excludeDomains": 2}


async def test_strict_filters_skip_a_default_that_cannot_honour_the_time_range(tmp_path, emulator):
    wiki = endpoint("wikipedia", "wikipedia", add_wikipedia(emulator), enabled=True)
    searx = endpoint("searxng", "searxng", mount_searxng(emulator, {"general": searxng_page(1)}))
    async with await open_runtime(tmp_path, cascade("web", wiki, searx)) as rt:
        filters = SearchFilters.create(time_range="week", strict=True)
        result = await rt.dispatcher.search(SearchRequest.create("q", "web", filters=filters), SearchScope())
    [skipped, served] = result.attempts
    assert (skipped.provider_instance_id, skipped.outcome.value) == ("wikipedia", "skipped_unsupported")
    assert skipped.error_message == "cannot honour timeRange (strictFilters)"
    assert (served.provider_instance_id, served.outcome.value) == ("searxng", "success")
    assert emulator.requests("/wiki/w/rest.php/v1/search/page") == []
    assert emulator.requests("/searxng/search")[0].param("time_range") == "week"


async def test_without_strict_filters_the_default_serves_and_reports_the_range_ignored(tmp_path, emulator):
    wiki = endpoint("wikipedia", "wikipedia", add_wikipedia(emulator), enabled=True)
    async with await open_runtime(tmp_path, cascade("web", wiki)) as rt:
        filters = SearchFilters.create(time_range="week")
        result = await rt.dispatcher.search(SearchRequest.create("q", "web", filters=filters), SearchScope())
    assert result.provider_instance_id == "wikipedia"
    assert [p.to_json() for p in result.ignored_params] == [
        {"param": "timeRange", "reason": "wikipedia has no way to express timeRange on its wire"}
    ]


async def test_the_cache_keys_every_filter(tmp_path, emulator):
    searx = endpoint("searxng", "searxng", mount_searxng(emulator, {"general": searxng_page(1)}))
    async with await open_runtime(tmp_path, cascade("web", searx, cache=True)) as rt:
        plain = SearchRequest.create("same query", "web")
        filtered = SearchRequest.create(
            "same query", "web", filters=SearchFilters.create(exclude_domains=["a.org"])
        )
        await rt.dispatcher.search(plain, SearchScope())
        await rt.dispatcher.search(filtered, SearchScope())
        assert len(emulator.requests("/searxng/search")) == 2  # with and without: two upstream calls
        again = await rt.dispatcher.search(filtered, SearchScope())
    assert len(emulator.requests("/searxng/search")) == 2  # the same query and filters twice: one
    assert again.cached


async def test_a_profile_sets_default_filters_the_caller_overrides(tmp_path, emulator):
    searx = endpoint("searxng", "searxng", mount_searxng(emulator, {"general": searxng_page(1)}))
    settings = {
        **cascade("web", searx),
        "research.profile.clean.filters.excludeDomains": "pinterest.com, quora.com",
        "research.profile.clean.filters.timeRange": "month",
    }
    async with await open_runtime(tmp_path, settings) as rt:
        await rt.dispatcher.search(SearchRequest.create("q", "web", profile="clean"), SearchScope())
        own = SearchFilters.create(time_range="day")
        await rt.dispatcher.search(
            SearchRequest.create("q", "web", profile="clean", filters=own), SearchScope()
        )
    first, second = emulator.requests("/searxng/search")
    assert (first.param("q"), first.param("time_range")) == ("q -site:pinterest.com -site:quora.com", "month")
    assert (second.param("q"), second.param("time_range")) == ("q -site:pinterest.com -site:quora.com", "day")


async def test_a_cursor_of_another_query_or_tenant_is_refused_naming_page(tmp_path, emulator):
    base = mount_searxng(emulator, {"general": lambda r: searxng_page(int(r.param("pageno") or 1))})
    settings = cascade("web", endpoint("searxng", "searxng", base))
    async with await open_runtime(tmp_path, settings) as rt:
        first = await rt.dispatcher.search(SearchRequest.create("crispr", "web"), SearchScope())
        assert first.next_page is not None
        assert "crispr" not in first.next_page and "searxng" not in first.next_page.split(".")[1]
        page = SearchFilters.create(page=first.next_page)
        refused = [
            (SearchRequest.create("other query", "web", filters=page), SearchScope()),
            (SearchRequest.create("crispr", "web", filters=page), SearchScope("other", "default")),
            (
                SearchRequest.create(
                    "crispr", "web", filters=SearchFilters.create(page=first.next_page, region="DE")
                ),
                SearchScope(),
            ),
            (
                SearchRequest.create("crispr", "web", filters=SearchFilters.create(page="bm90.YQ")),
                SearchScope(),
            ),
        ]
        for request, scope in refused:
            with pytest.raises(InvalidRequestError) as caught:
                await rt.dispatcher.search(request, scope)
            assert caught.value.field == "page"
        second = await rt.dispatcher.search(
            SearchRequest.create("crispr", "web", filters=page), SearchScope()
        )
    assert second.hits[0].url == "https://example.org/p2/0"
    assert [r.param("pageno") for r in emulator.requests("/searxng/search")] == ["1", "2"]


def test_a_cursor_expires_and_one_from_another_master_key_is_foreign():
    from zarniwoop.dispatch.paging import CURSOR_TTL_SECONDS, PageCursors
    from zarniwoop.storage.crypto import SecretBox

    from ..support.clock import TestClock

    clock = TestClock()
    cursors = PageCursors(SecretBox(b"k" * 32), clock)
    request = SearchRequest.create("crispr", "web")
    cursor = cursors.seal(request, SearchScope(), "searxng", {"page": "2"})
    paged = SearchRequest.create("crispr", "web", filters=SearchFilters.create(page=cursor))
    resume = cursors.open(paged, SearchScope())
    assert (resume.instance_id, resume.get("page")) == ("searxng", "2")
    with pytest.raises(InvalidRequestError) as foreign:
        PageCursors(SecretBox(b"j" * 32), clock).open(paged, SearchScope())
    assert foreign.value.field == "page" and "another search" in foreign.value.reason
    clock.advance(CURSOR_TTL_SECONDS + 1)
    with pytest.raises(InvalidRequestError) as expired:
        cursors.open(paged, SearchScope())
    assert expired.value.field == "page" and "expired" in expired.value.reason

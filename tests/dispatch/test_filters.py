"""Search filters through the real runtime against the loopback emulators (issue 47).

Domain filters a wire cannot express applied to the hits, the dropped ones counted with their
reason; `strictFilters` skipping a candidate, the cache and coalescing keys, profile default filters,
and cursors refused naming `page`. Each wire's own parameters: `test_filters_on_the_wire.py`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from zarniwoop.contract.errors import InvalidRequestError
from zarniwoop.contract.filters import SearchFilters
from zarniwoop.contract.query import SearchRequest, SearchScope

from ..support.bodies import openalex_works, searxng_page
from ..support.providers_academic import add_openalex, add_wikipedia
from ..support.providers_web import mount_searxng
from ..support.runtime import cascade, endpoint, open_runtime

pytestmark = pytest.mark.anyio


def _json(data: Any) -> bytes:
    return json.dumps(data).encode()


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

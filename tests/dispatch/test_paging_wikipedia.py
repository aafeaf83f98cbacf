"""Wikipedia's pages through the real runtime on the loopback emulator (issue 47): the first from the
REST search, which has no offset, the next ones from the Action API's `list=search` at `sroffset`,
each cursor resuming where the previous page ended, none past the last result."""

from __future__ import annotations

import json

import pytest

from zarniwoop.contract.filters import SearchFilters
from zarniwoop.contract.query import SearchRequest, SearchScope

from ..support.bodies import wikipedia_pages, wikipedia_search
from ..support.providers_academic import add_wikipedia
from ..support.runtime import cascade, endpoint, open_runtime

pytestmark = pytest.mark.anyio


async def test_page_two_and_three_are_the_action_apis_next_offsets(tmp_path, emulator):
    first_page = json.dumps(wikipedia_pages("Article 0", "Article 1", "Article 2")).encode()
    base = add_wikipedia(
        emulator,
        body=first_page,
        action=lambda r: wikipedia_search(int(r.param("sroffset") or 0), int(r.param("srlimit")), 7),
    )
    settings = cascade("encyclopedia", endpoint("wikipedia", "wikipedia", base, enabled=True))
    pages = []
    async with await open_runtime(tmp_path, settings) as rt:
        cursor = None
        for _ in range(3):
            filters = SearchFilters.create(page=cursor)
            request = SearchRequest.create("article", "encyclopedia", max_results=3, filters=filters)
            pages.append(await rt.dispatcher.search(request, SearchScope()))
            cursor = pages[-1].next_page
    assert [[h.title for h in page.hits] for page in pages] == [
        ["Article 0", "Article 1", "Article 2"],
        ["Article 3", "Article 4", "Article 5"],
        ["Article 6"],
    ]
    assert pages[1].hits[0].url.endswith("/wiki/wiki/Article_3")
    assert pages[-1].next_page is None  # the Action API sent no `continue`: the last page
    assert all(page.provider_instance_id == "wikipedia" for page in pages)
    assert len(emulator.requests("/wiki/w/rest.php/v1/search/page")) == 1
    sent = emulator.requests("/wiki/w/api.php")
    assert [(r.param("srsearch"), r.param("srlimit"), r.param("sroffset")) for r in sent] == [
        ("article", "3", "3"),
        ("article", "3", "6"),
    ]

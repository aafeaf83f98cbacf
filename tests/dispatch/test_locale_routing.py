"""Multi-language Wikipedia (seed v2): a request's locale routes to the instance of that language first."""

from __future__ import annotations

import pytest

from zarniwoop.contract import Modality, Outcome, SearchRequest, SearchScope
from zarniwoop.dispatch.ordering import order_candidates

from ..support.providers_academic import add_wikipedia
from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio
SCOPE = SearchScope()


def wikis(emulator):
    en = add_wikipedia(emulator, "/en")
    de = add_wikipedia(emulator, "/de")
    return {
        **only(),
        **endpoint("wiki-en", "wikipedia", en, language="en"),
        **endpoint("wiki-de", "wikipedia", de, language="de"),
        "research.default.encyclopedia": "wiki-en",
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.encyclopedia": 0,
    }


def ids(candidates, keep):
    return [c.id for c in candidates if c.id in keep]


async def test_locale_routes_to_the_matching_wiki_before_the_default(tmp_path, emulator):
    async with await open_runtime(tmp_path, wikis(emulator)) as rt:
        german = await rt.dispatcher.search(
            SearchRequest.create("Linux", "encyclopedia", locale="de-CH"), SCOPE
        )
        assert german.provider_instance_id == "wiki-de"
        assert german.hits[0].url.startswith(f"{emulator.url}/de/wiki/")
        assert [a.provider_instance_id for a in german.attempts if a.outcome is Outcome.SUCCESS] == [
            "wiki-de"
        ]
        plain = await rt.dispatcher.search(SearchRequest.create("Linux", "encyclopedia"), SCOPE)
        assert plain.provider_instance_id == "wiki-en"
        english = await rt.dispatcher.search(
            SearchRequest.create("Linux", "encyclopedia", locale="en_GB"), SCOPE
        )
        assert english.provider_instance_id == "wiki-en"
    assert len(emulator.requests("/de/w/rest.php/v1/search/page")) == 1
    assert len(emulator.requests("/en/w/rest.php/v1/search/page")) == 2


async def test_language_expert_param_routes_like_a_locale(tmp_path, emulator):
    async with await open_runtime(tmp_path, wikis(emulator)) as rt:
        result = await rt.dispatcher.search(
            SearchRequest.create("Linux", "encyclopedia", expert_params={"language": "de"}), SCOPE
        )
        assert result.provider_instance_id == "wiki-de"
        assert result.note is None  # honoured by the German wiki


async def test_only_instances_of_one_protocol_trade_places(tmp_path):
    settings = {
        **only(),
        **endpoint("wiki-en", "wikipedia", "https://en.wikipedia.org"),
        **endpoint("hn", "hackernews", "https://hn.algolia.com"),
        **endpoint("wiki-de", "wikipedia", "https://de.wikipedia.org"),  # language from the host
        **endpoint("wiki-ch", "wikipedia", "https://mirror.example.org", language="de-CH"),
    }
    keep = {"wiki-en", "hn", "wiki-de", "wiki-ch"}
    async with await open_runtime(tmp_path, settings) as rt:
        provider_set = await rt.factory.providers(SCOPE)
        plain = ["wiki-en", "hn", "wiki-de", "wiki-ch"]
        assert ids(order_candidates(provider_set, Modality.WEB), keep) == plain
        # de-CH: the exact match first, then the other German wiki, then English; hackernews keeps its
        # place between them.
        assert ids(order_candidates(provider_set, Modality.WEB, "de-CH"), keep) == [
            "wiki-ch",
            "hn",
            "wiki-de",
            "wiki-en",
        ]
        assert ids(order_candidates(provider_set, Modality.WEB, "de"), keep) == [
            "wiki-de",
            "hn",
            "wiki-ch",
            "wiki-en",
        ]
        assert ids(order_candidates(provider_set, Modality.WEB, "fr"), keep) == plain

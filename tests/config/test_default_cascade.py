"""The default cascade of an untouched install, per modality (docs/providers.md, "Default order"):
the paid keyed providers first — they serve when a key resolves and are skipped at no cost when
none does — then the best free source, then the narrower ones. Every modality has a keyless one."""

from __future__ import annotations

import pytest

from zarniwoop.contract import Modality, SearchScope
from zarniwoop.dispatch.ordering import order_candidates

from ..support.runtime import open_runtime

pytestmark = pytest.mark.anyio

DEFAULT_ORDER = {
    Modality.WEB: ["serper", "brave", "exa", "tavily", "wikipedia", "hackernews", "stackexchange"],
    Modality.IMAGE: ["serper", "brave", "commons"],
    Modality.VIDEO: ["serper", "brave", "peertube"],
    Modality.PDF: ["serper", "exa", "arxiv"],
    Modality.NEWS: ["serper", "brave", "exa", "tavily", "gdelt", "hackernews"],
    Modality.ACADEMIC: [
        "serper",
        "exa",
        "openalex",
        "crossref",
        "semanticscholar",
        "europepmc",
        "arxiv",
        "pubmed",
    ],
    Modality.ENCYCLOPEDIA: ["wikipedia"],
    Modality.BOOK: ["openlibrary"],
    Modality.MAP: ["nominatim"],
    Modality.CODE: ["github", "stackexchange"],
    Modality.INTERNAL_DOC: ["local"],
    Modality.RAG: ["local"],
}
KEYED = {"serper", "brave", "exa", "tavily"}


async def test_each_modality_has_its_documented_default_order(tmp_path):
    assert set(DEFAULT_ORDER) == set(Modality)
    async with await open_runtime(tmp_path) as rt:
        provider_set = await rt.factory.providers(SearchScope())
    for modality, expected in DEFAULT_ORDER.items():
        assert [i.id for i in order_candidates(provider_set, modality)] == expected, modality.value
        keyless = [i for i in order_candidates(provider_set, modality) if i.id not in KEYED]
        assert keyless and all(not i.protocol.key_required and i.config.enabled for i in keyless)


async def test_new_keyless_endpoints_pace_at_their_documented_rates(tmp_path):
    async with await open_runtime(tmp_path) as rt:
        instances = (await rt.factory.providers(SearchScope())).instances
        rates = {
            i: instances[i].config.rate_per_second
            for i in ("nominatim", "github", "semanticscholar", "gdelt")
        }
        settings = rt.settings.scoped(SearchScope())
    assert rates == {
        "nominatim": 1.0,  # the usage policy's absolute maximum
        "github": pytest.approx(10 / 60),  # search without a token: 10 a minute
        "semanticscholar": pytest.approx(1 / 3),  # the small shared keyless pool
        "gdelt": pytest.approx(1 / 5),  # "one every 5 seconds"
    }
    assert settings.get_int("research.cache.ttlSeconds.map", 0) == 86400  # Nominatim asks for caching


async def test_optional_keys_raise_the_pace_like_pubmed_does(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_operator")
    monkeypatch.setenv("SEMANTIC_SCHOLAR_API_KEY", "s2-operator")
    monkeypatch.setenv("STACKEXCHANGE_KEY", "se-operator")
    async with await open_runtime(tmp_path) as rt:
        instances = (await rt.factory.providers(SearchScope())).instances
    assert instances["github"].config.key_source == "env:GITHUB_TOKEN"
    assert instances["github"].config.rate_per_second == pytest.approx(0.5)
    assert instances["semanticscholar"].config.key_source == "env:SEMANTIC_SCHOLAR_API_KEY"
    assert instances["semanticscholar"].config.rate_per_second == 1.0
    assert instances["stackexchange"].config.key_source == "env:STACKEXCHANGE_KEY"

"""Default pacing per provider: documented free-tier rates, and PubMed's higher rate with a key."""

from __future__ import annotations

import pytest

from zarniwoop.contract import SearchScope

from ..support.runtime import open_runtime

pytestmark = pytest.mark.anyio


async def test_builtin_keyless_providers_pace_at_their_documented_rates(tmp_path):
    async with await open_runtime(tmp_path) as rt:
        instances = (await rt.factory.providers(SearchScope())).instances
        rates = {
            i: instances[i].config.rate_per_second for i in ("arxiv", "pubmed", "openlibrary", "hackernews")
        }
    assert rates == {"arxiv": pytest.approx(1 / 3), "pubmed": 3.0, "openlibrary": 1.0, "hackernews": 2.0}


async def test_pubmed_with_a_key_paces_at_ten_per_second_unless_set(tmp_path, monkeypatch):
    monkeypatch.setenv("NCBI_API_KEY", "operator-key")
    async with await open_runtime(
        tmp_path,
        {"research.endpoint.pm-slow.protocol": "pubmed", "research.endpoint.pm-slow.rateLimit.perSecond": 1},
    ) as rt:
        instances = (await rt.factory.providers(SearchScope())).instances
        assert instances["pubmed"].config.key_source == "env:NCBI_API_KEY"
        assert instances["pubmed"].config.rate_per_second == 10.0
        assert instances["pm-slow"].config.rate_per_second == 1.0

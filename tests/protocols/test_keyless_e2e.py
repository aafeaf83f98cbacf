"""The keyless APIs of issue 16 through the real runtime and dispatcher, on the loopback emulator:
optional keys in the provider's own place, Stack Exchange's `backoff` and quota, GitHub's rate-limit
403, GDELT's plain-text 200 errors, Nominatim's identifying User-Agent."""

from __future__ import annotations

import json
import time

import pytest

from zarniwoop.contract import SearchRequest, SearchScope
from zarniwoop.views.providers import provider_entries

from ..support.emulator import Reply
from ..support.providers_academic import add_hackernews
from ..support.providers_open import (
    add_gdelt,
    add_github,
    add_nominatim,
    add_semanticscholar,
    add_stackexchange,
)
from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio
SCOPE = SearchScope()
NO_CACHE = {"research.cache.ttlSeconds": 0, "research.cache.ttlSeconds.news": 0}


def outcomes(result):
    return [(a.provider_instance_id, a.outcome.value) for a in result.attempts]


async def test_stackexchange_key_quota_and_backoff_bench_every_modality(tmp_path, emulator):
    base = add_stackexchange(emulator, key="se-key", backoff=30)
    settings = {
        **only("stackexchange"),
        **NO_CACHE,
        **endpoint("stackexchange", "stackexchange", base, apiKey="se-key"),
    }
    async with await open_runtime(tmp_path, settings) as rt:
        first = await rt.dispatcher.search(SearchRequest.create("sigbus", "code"), SCOPE)
        assert first.provider_instance_id == "stackexchange"
        assert first.hits[0].title.startswith("A fatal error has been detected by the Java Runtime")
        [sent] = emulator.requests("/stackexchange/2.3/search/advanced")
        assert sent.param("key") == "se-key" and sent.param("site") == "stackoverflow"
        # The answer asked for 30 s: both modalities call the same method, so both are benched.
        [entry] = [
            e for e in await provider_entries(rt.dispatcher, SCOPE, admin=True) if e["id"] == "stackexchange"
        ]
        assert entry["availability"] == "COOLDOWN"
        assert {c["modality"] for c in entry["cooldowns"]} == {"CODE", "WEB"}
        assert entry["cooldowns"][0]["reason"] == "the provider asked for a 30 s backoff"
        assert entry["quota"] == {
            "used": 4,
            "limit": 300,
            "remaining": 296,
            "period": "day",
            "resetsAt": None,
            "source": "provider",
        }
        again = await rt.dispatcher.search(SearchRequest.create("sigbus", "web"), SCOPE)
        assert outcomes(again)[0] == ("stackexchange", "skipped_cooldown") or again.attempts[0].panic
        assert len(emulator.requests("/stackexchange/2.3/search/advanced")) <= 2


async def test_stackexchange_wrong_key_is_an_auth_failure(tmp_path, emulator):
    base = add_stackexchange(emulator, key="se-key")
    settings = {
        **only("stackexchange"),
        **NO_CACHE,
        **endpoint("stackexchange", "stackexchange", base, apiKey="wrong"),
    }
    async with await open_runtime(tmp_path, settings) as rt:
        result = await rt.dispatcher.search(SearchRequest.create("sigbus", "code"), SCOPE)
        [(instance, outcome)] = outcomes(result)
        assert (instance, outcome) == ("stackexchange", "hard_error")
        assert result.attempts[0].error_message.startswith(
            "HTTP 400 (key is not valid for passed access_token"
        )
        assert "wrong" not in result.attempts[0].error_message
        cooldowns = await rt.dispatcher.cooldowns.get_many(SCOPE, ["research:stackexchange:code"])
        remaining = cooldowns["research:stackexchange:code"].until - rt.dispatcher.clock.now()
        assert 1700 < remaining <= 1800  # 30 min, as for any refused key


async def test_github_token_as_bearer_and_a_spent_limit_benches_until_reset(tmp_path, emulator):
    base = add_github(emulator, token="ghp_test")
    settings = {
        **only("github"),
        **NO_CACHE,
        **endpoint("github", "github", base, apiKey="ghp_test"),
        **endpoint("github-code", "github", base, apiKey="ghp_test", search="code"),
        "research.default.code": "github-code",
    }
    async with await open_runtime(tmp_path, settings) as rt:
        result = await rt.dispatcher.search(SearchRequest.create("profile black", "code"), SCOPE)
        assert result.provider_instance_id == "github-code"
        assert result.hits[0].title == "busdos/cloud-protocols: pyproject.toml"
        [sent] = emulator.requests("/github/search/code")
        assert sent.header("authorization") == "Bearer ghp_test"
        assert sent.header("accept") == "application/vnd.github+json"
        assert result.upstream_headers["x-ratelimit-limit"] == "30"

        emulator.add(
            "/github/search/repositories",
            Reply.json(
                {"message": "API rate limit exceeded for 127.0.0.1."},
                status=403,
                headers={
                    "X-RateLimit-Remaining": "0",
                    "X-RateLimit-Reset": str(int(time.time()) + 120),  # the emulator sends `Date: now`
                },
            ),
        )
        limited = await rt.dispatcher.search(
            SearchRequest.create("ratelimited", "code", tier="expert", pinned_provider_id="github"), SCOPE
        )
        assert limited.attempts[0].error_message == (
            "HTTP 403 rate limited: API rate limit exceeded for 127.0.0.1."
        )
        cooldown = (await rt.dispatcher.cooldowns.get_many(SCOPE, ["research:github:code"]))[
            "research:github:code"
        ]
        assert 100 < cooldown.until - rt.dispatcher.clock.now() <= 120  # until the reset, not 30 min


async def test_gdelt_plain_text_200_is_a_soft_error_and_news_moves_on(tmp_path, emulator):
    settings = {
        **only("gdelt", "hackernews"),
        **NO_CACHE,
        "research.endpoint.gdelt.baseUrl": add_gdelt(emulator),
        # GDELT's own pace (one call per 5 s) would pass the second search over as skipped_paced
        "research.endpoint.gdelt.rateLimit.perSecond": 10,
        "research.endpoint.hackernews.baseUrl": add_hackernews(emulator),
    }
    async with await open_runtime(tmp_path, settings) as rt:
        result = await rt.dispatcher.search(SearchRequest.create("br", "news"), SCOPE)
        assert outcomes(result) == [("gdelt", "soft_error"), ("hackernews", "success")]
        assert result.attempts[0].error_message == (
            "gdelt: One or more of your keywords were too short, too long or too common: (locationcc:br)"
        )
        assert await rt.dispatcher.cooldowns.get_many(SCOPE, ["research:gdelt:news"]) == {}
        served = await rt.dispatcher.search(SearchRequest.create("vizhinjam", "news"), SCOPE)
        assert served.provider_instance_id == "gdelt"
        assert served.hits[0].extras["outlet"] == "thehindu.com"


async def test_semantic_scholar_sends_its_key_only_when_set(tmp_path, emulator):
    base = add_semanticscholar(emulator, key="s2-key")
    settings = {
        **only(),
        **NO_CACHE,
        **endpoint("s2", "semanticscholar", base, apiKey="s2-key"),
        **endpoint("s2-open", "semanticscholar", base),
        **endpoint("s2-wrong", "semanticscholar", base, apiKey="nope"),
    }
    async with await open_runtime(tmp_path, settings) as rt:
        for pinned in ("s2", "s2-open", "s2-wrong"):
            await rt.dispatcher.search(
                SearchRequest.create("chemistry tools", "academic", pinned_provider_id=pinned), SCOPE
            )
        keys = [r.header("x-api-key") for r in emulator.requests("/s2/graph/v1/paper/search")]
        assert keys == ["s2-key", None, "nope"]
        wrong = await rt.dispatcher.search(
            SearchRequest.create("chemistry tools again", "academic", pinned_provider_id="s2-wrong"), SCOPE
        )
        assert wrong.error_message is not None
        entries = {e["id"]: e for e in await provider_entries(rt.dispatcher, SCOPE, admin=True)}
        assert entries["s2-wrong"]["cooldowns"][0]["reason"].startswith("HTTP 403 (Forbidden)")
        assert entries["s2"]["availability"] == "READY"


async def test_nominatim_is_asked_with_an_identifying_agent_and_the_contact(tmp_path, emulator):
    base = add_nominatim(emulator)
    settings = {
        **only("nominatim"),
        **endpoint("nominatim", "nominatim", base, contactEmail="maps@example.org"),
    }
    async with await open_runtime(tmp_path, settings) as rt:
        first = await rt.dispatcher.search(SearchRequest.create("1 Place des Palais", "map"), SCOPE)
        again = await rt.dispatcher.search(SearchRequest.create("1 Place des Palais", "map"), SCOPE)
    assert first.hits[0].title == "Palais Royal - Koninklijk Paleis"
    assert again.cached is True  # MAP answers are cached for a day: the policy asks for it
    [sent] = emulator.requests("/nominatim/search")
    assert (
        sent.header("user-agent")
        == "zarniwoop/0.1 (+https://pypi.org/project/zarniwoop/; mailto:maps@example.org)"
    )
    assert sent.param("email") == "maps@example.org"
    assert json.loads(json.dumps(first.hits[0].extras))["osmId"] == 3299902

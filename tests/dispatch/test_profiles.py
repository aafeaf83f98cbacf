"""The dispatcher honours an agent profile: the cascade narrows to the profile's providers in its
order, cooldowns and panic mode work within it, the cache keeps each profile's answer apart (and a
redefined profile's), pinning stays inside it, and a token binding fixes it."""

from __future__ import annotations

import pytest

from zarniwoop.config.profiles import Profile, profiles
from zarniwoop.contract import Modality, Outcome, SearchRequest, SearchScope
from zarniwoop.contract.errors import AccessDeniedError, InvalidRequestError
from zarniwoop.dispatch.profiles import ProfileChoice

from ..support.bodies import openalex_works
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio
SCOPE = SearchScope()


def three_openalex(emulator, **extra):
    return {
        **only(),
        **{k: v for i in "abc" for k, v in endpoint(f"oa-{i}", "openalex", f"{emulator.url}/{i}").items()},
        "research.default.academic": "oa-a",
        "research.fallback.academic": "oa-b,oa-c",
        "research.profile.narrow.providers.academic": "oa-c,oa-b",
        "research.profile.wide.providers": "oa-b",
        **extra,
    }


def academic(query="graphene", **kw):
    return SearchRequest.create(query, "academic", **kw)


def walked(result):
    return [
        (a.provider_instance_id, a.outcome)
        for a in result.attempts
        if a.outcome is not Outcome.SKIPPED_DISABLED
    ]


async def test_the_profile_narrows_and_orders_the_cascade_and_the_cache_keeps_profiles_apart(
    tmp_path, emulator
):
    for i in "abc":
        emulator.add(f"/{i}/works", Reply.json(openalex_works(1, prefix=f"From {i}")))
    async with await open_runtime(tmp_path, three_openalex(emulator)) as rt:
        narrow = await rt.dispatcher.search(academic(profile="narrow"), SCOPE)
        assert walked(narrow) == [("oa-c", Outcome.SUCCESS)]
        defined = profiles((await rt.dispatcher.factory.providers(SCOPE)).settings)
        assert narrow.profile is not None and narrow.profile.sha256 == defined["narrow"].sha256
        assert narrow.to_json()["profile"] == {"name": "narrow", "sha256": defined["narrow"].sha256}
        # the same query without a profile: not the profile's cached answer
        plain = await rt.dispatcher.search(academic(), SCOPE)
        assert walked(plain) == [("oa-a", Outcome.SUCCESS)] and "profile" not in plain.to_json()
        again = await rt.dispatcher.search(academic(profile="narrow"), SCOPE)
        assert again.cached and again.provider_instance_id == "oa-c"
        # the generic list applies to every modality it has providers for
        wide = await rt.dispatcher.search(academic(profile="wide"), SCOPE)
        assert walked(wide) == [("oa-b", Outcome.SUCCESS)]
        # a modality the profile does not cover keeps the global order
        assert defined["narrow"].names_for(Modality.WEB, ["wiki"]) is None
        with pytest.raises(InvalidRequestError) as unknown:
            await rt.dispatcher.search(academic(profile="nobody"), SCOPE)
        assert unknown.value.field == "profile"
        with pytest.raises(InvalidRequestError) as outside:
            await rt.dispatcher.search(academic(profile="narrow", pinned_provider_id="oa-a"), SCOPE)
        assert outside.value.field == "pinnedProviderId"
    assert [len(emulator.requests(f"/{i}/works")) for i in "abc"] == [1, 1, 1]


async def test_cooldowns_and_panic_mode_stay_within_the_profile(tmp_path, emulator):
    emulator.add("/a/works", Reply.json(openalex_works(1)))
    emulator.add("/b/works", Reply(status=503))
    emulator.add("/c/works", Reply(status=429, headers={"Retry-After": "600"}))
    settings = three_openalex(emulator, **{"research.cache.ttlSeconds": 0})
    async with await open_runtime(tmp_path, settings) as rt:
        first = await rt.dispatcher.search(academic(profile="narrow"), SCOPE)
        assert walked(first) == [("oa-c", Outcome.HARD_ERROR), ("oa-b", Outcome.HARD_ERROR)]
        assert first.error_message is not None  # oa-a, outside the profile, was never asked
        panic = await rt.dispatcher.search(academic("q2", profile="narrow"), SCOPE)
        assert [(a.provider_instance_id, a.outcome, a.panic) for a in panic.attempts][-1] == (
            "oa-b",
            Outcome.HARD_ERROR,
            True,
        )
        # the global order still has oa-a
        assert walked(await rt.dispatcher.search(academic("q3"), SCOPE))[-1] == ("oa-a", Outcome.SUCCESS)
    assert len(emulator.requests("/a/works")) == 1


async def test_a_token_binding_fixes_the_profile_and_a_redefinition_misses_the_cache(tmp_path, emulator):
    for i in "abc":
        emulator.add(f"/{i}/works", Reply.json(openalex_works(1)))
    async with await open_runtime(tmp_path, three_openalex(emulator)) as rt:
        bound_to_wide = ProfileChoice(bound="wide")
        bound = await rt.dispatcher.search(academic(), SCOPE, profile=bound_to_wide)
        assert bound.provider_instance_id == "oa-b" and bound.profile and bound.profile.name == "wide"
        with pytest.raises(AccessDeniedError):
            await rt.dispatcher.search(academic(profile="narrow"), SCOPE, profile=bound_to_wide)
        asked_wide = ProfileChoice(asked="wide")  # a connection's choice; the argument wins
        assert (
            await rt.dispatcher.search(academic(profile="narrow"), SCOPE, profile=asked_wide)
        ).provider_instance_id == "oa-c"
        overrides = {"research.profile.narrow.providers.academic": "oa-b"}
        redefined = await rt.dispatcher.search(academic(profile="narrow"), SCOPE, overrides)
        assert redefined.provider_instance_id == "oa-b" and not redefined.cached


def test_the_identity_is_the_canonical_definition():
    one = Profile("p", ("exa", "brave"), {Modality.ACADEMIC: ("arxiv",)}, "tenant")
    assert one.canonical() == {"providers": ["exa", "brave"], "modalities": {"academic": ["arxiv"]}}
    same_elsewhere = Profile("q", ("exa", "brave"), {Modality.ACADEMIC: ("arxiv",)}, "project")
    assert one.sha256 == same_elsewhere.sha256  # name and level are not the definition
    reordered = Profile("p", ("brave", "exa"), {Modality.ACADEMIC: ("arxiv",)}, "tenant")
    widened = Profile("p", ("exa", "brave"), {Modality.ACADEMIC: ("arxiv", "openalex")}, "tenant")
    assert len({one.sha256, reordered.sha256, widened.sha256}) == 3
    assert one.names_for(Modality.ACADEMIC, ["arxiv", "exa"]) == ("arxiv",)
    assert one.names_for(Modality.WEB, ["exa", "brave", "wiki"]) == ("exa", "brave")
    assert one.names_for(Modality.NEWS, ["hackernews"]) is None


def test_profile_names_follow_one_rule():
    with pytest.raises(InvalidRequestError) as bad:
        SearchRequest.create("q", "web", profile="Research.Agent")
    assert bad.value.field == "profile"
    assert SearchRequest.create("q", "web", profile="").profile is None
    assert academic(profile="a").cache_key() != academic(profile="b").cache_key()


async def test_the_python_api_takes_a_profile(tmp_path, emulator):
    from zarniwoop.api import Zarniwoop

    for i in "abc":
        emulator.add(f"/{i}/works", Reply.json(openalex_works(1)))
    async with await open_runtime(tmp_path, three_openalex(emulator)) as rt:
        zw = Zarniwoop(rt, SCOPE, owns_runtime=False)
        assert (await zw.search("graphene", "academic", profile="narrow")).provider_instance_id == "oa-c"
        expert = await zw.search_expert("graphene", "academic", site="arxiv.org", profile="wide")
        assert expert.provider_instance_id == "oa-b"

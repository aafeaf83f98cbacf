"""The alias resolver against every example of seed 002 §3 ("Model Alias Resolution", "Comma Cascade",
"Named Provider Instances"), with the seed's expected answers, plus the edges it names."""

from __future__ import annotations

import pickle

import pytest

from zarniwoop.contract import ConfigError, SearchScope, UnknownModelError
from zarniwoop.llm.choice.aliases import (
    MAX_DEPTH,
    DictSettings,
    Resolution,
    alias_table,
    resolve,
    split_cascade,
)

from ..support.runtime import open_runtime

# The seed's multi-provider tenant (§3 "Example settings for a Tenant with a multi-provider setup").
ACME = {
    "ai.default.provider": "gemini",
    "ai.default.model": "gemini-2.5-flash",
    "ai.alias.default.fast": "gemini:gemini-2.5-flash",
    "ai.alias.default.analyze": "anthropic:claude-sonnet-4-5",
    "ai.alias.default.deep": "anthropic:claude-opus-4",
    "ai.alias.default.web": "gemini:gemini-2.5-pro",
    "ai.alias.default.code": "anthropic:claude-sonnet-4-5",
}
# §3 "Named Provider Instances".
INSTANCES = {
    "ai.provider.openai.apiKey": "sk-real-openai",
    "ai.provider.deepseek-direct.type": "openai",
    "ai.provider.deepseek-direct.baseUrl": "https://api.deepseek.com/v1",
    "ai.provider.deepseek-direct.apiKey": "sk-deepseek",
    "ai.alias.default.analyze": "deepseek-direct:deepseek-v4-flash",
}
# §3 "Comma Cascade" example settings (tenant acme) — arthur and chat both set.
ARTHUR_AND_CHAT = {
    "ai.alias.default.arthur": "anthropic:claude-opus-4",
    "ai.alias.default.chat": "gemini:gemini-2.5-flash",
}
TENANT_DEFAULT = {"ai.default.provider": "gemini", "ai.default.model": "gemini-2.5-flash"}


def r(protocol: str, instance: str, model: str, *path: str) -> Resolution:
    return Resolution(protocol, instance, model, tuple(path))


CASES = [
    # --- §3 Model Alias Resolution -------------------------------------------------------------
    (
        "direct provider:model",
        {},
        "gemini:gemini-2.5-flash",
        r("gemini", "gemini", "gemini-2.5-flash", "gemini:gemini-2.5-flash"),
    ),
    (
        "direct, every wire type",
        {},
        "ollama-cloud:gpt-oss:120b",
        r("ollama-cloud", "ollama-cloud", "gpt-oss:120b", "ollama-cloud:gpt-oss:120b"),
    ),
    (
        "the model is the rest after the first colon",
        {},
        "ollama:qwen3:30b",
        r("ollama", "ollama", "qwen3:30b", "ollama:qwen3:30b"),
    ),
    (
        "alias default:fast",
        ACME,
        "default:fast",
        r("gemini", "gemini", "gemini-2.5-flash", "default:fast", "gemini:gemini-2.5-flash"),
    ),
    (
        "alias default:analyze",
        ACME,
        "default:analyze",
        r("anthropic", "anthropic", "claude-sonnet-4-5", "default:analyze", "anthropic:claude-sonnet-4-5"),
    ),
    (
        "alias default:deep",
        ACME,
        "default:deep",
        r("anthropic", "anthropic", "claude-opus-4", "default:deep", "anthropic:claude-opus-4"),
    ),
    (
        "alias default:web",
        ACME,
        "default:web",
        r("gemini", "gemini", "gemini-2.5-pro", "default:web", "gemini:gemini-2.5-pro"),
    ),
    (
        "alias default:code",
        ACME,
        "default:code",
        r("anthropic", "anthropic", "claude-sonnet-4-5", "default:code", "anthropic:claude-sonnet-4-5"),
    ),
    (
        "default: safety net with no alias configured",
        TENANT_DEFAULT,
        "default:analyze",
        r("gemini", "gemini", "gemini-2.5-flash", "default:analyze", "gemini:gemini-2.5-flash"),
    ),
    (
        "a bundled recipe's default:fast works with only the tenant default",
        TENANT_DEFAULT,
        "default:fast",
        r("gemini", "gemini", "gemini-2.5-flash", "default:fast", "gemini:gemini-2.5-flash"),
    ),
    (
        "alias chained through another alias",
        {"ai.alias.cheap.lookup": "default:fast", **ACME},
        "cheap:lookup",
        r("gemini", "gemini", "gemini-2.5-flash", "cheap:lookup", "default:fast", "gemini:gemini-2.5-flash"),
    ),
    (
        "empty spec → tenant default",
        TENANT_DEFAULT,
        "",
        r("gemini", "gemini", "gemini-2.5-flash", "gemini:gemini-2.5-flash"),
    ),
    # --- §3 Comma Cascade -----------------------------------------------------------------------
    (
        "tenant acme has default:arthur → claude-opus-4",
        ARTHUR_AND_CHAT,
        "default:arthur,default:chat",
        r("anthropic", "anthropic", "claude-opus-4", "default:arthur", "anthropic:claude-opus-4"),
    ),
    (
        "default:arthur unset → default:chat's target",
        {"ai.alias.default.chat": "gemini:gemini-2.5-flash"},
        "default:arthur,default:chat",
        r(
            "gemini",
            "gemini",
            "gemini-2.5-flash",
            "default:arthur",
            "default:chat",
            "gemini:gemini-2.5-flash",
        ),
    ),
    (
        "neither arthur nor chat → the tenant default, no error",
        {"ai.default.provider": "anthropic", "ai.default.model": "claude-haiku-4-5"},
        "default:arthur,default:chat",
        r(
            "anthropic",
            "anthropic",
            "claude-haiku-4-5",
            "default:arthur",
            "default:chat",
            "anthropic:claude-haiku-4-5",
        ),
    ),
    (
        "single element behaves as before",
        ARTHUR_AND_CHAT,
        "default:chat",
        r("gemini", "gemini", "gemini-2.5-flash", "default:chat", "gemini:gemini-2.5-flash"),
    ),
    (
        "cascade in an alias value: first stage",
        {"ai.alias.default.chat": "anthropic:claude-haiku-4-5,openai:gpt-4o-mini"},
        "default:chat",
        r("anthropic", "anthropic", "claude-haiku-4-5", "default:chat", "anthropic:claude-haiku-4-5"),
    ),
    (
        "cascade in an alias value reached through a recipe cascade",
        {"ai.alias.default.chat": "anthropic:claude-haiku-4-5,openai:gpt-4o-mini"},
        "default:arthur,default:chat",
        r(
            "anthropic",
            "anthropic",
            "claude-haiku-4-5",
            "default:arthur",
            "default:chat",
            "anthropic:claude-haiku-4-5",
        ),
    ),
    (
        "cascade in an alias value: second stage when the first is not configured",
        {"ai.alias.default.chat": "default:fancy,openai:gpt-4o-mini"},
        "default:chat",
        r("openai", "openai", "gpt-4o-mini", "default:chat", "default:fancy", "openai:gpt-4o-mini"),
    ),
    (
        "whitespace around commas is trimmed",
        {},
        "  cheap:x ,  openai:gpt-4o  ",
        r("openai", "openai", "gpt-4o", "cheap:x", "openai:gpt-4o"),
    ),
    (
        "empty elements are skipped",
        {},
        "cheap:x,,, openai:gpt-4o,",
        r("openai", "openai", "gpt-4o", "cheap:x", "openai:gpt-4o"),
    ),
    (
        "a direct element wins immediately",
        ARTHUR_AND_CHAT,
        "openai:gpt-4o,default:arthur",
        r("openai", "openai", "gpt-4o", "openai:gpt-4o"),
    ),
    (
        "a non-default namespace that is not configured moves on",
        {},
        "cheap:lookup,anthropic:claude-haiku-4-5",
        r("anthropic", "anthropic", "claude-haiku-4-5", "cheap:lookup", "anthropic:claude-haiku-4-5"),
    ),
    (
        "each element has its own seen set: a repeated missing element is no cycle",
        TENANT_DEFAULT,
        "default:b,default:b",
        r("gemini", "gemini", "gemini-2.5-flash", "default:b", "default:b", "gemini:gemini-2.5-flash"),
    ),
    (
        "sibling elements of an alias value do not share a seen set",
        {**TENANT_DEFAULT, "ai.alias.default.pair": "default:leaf,default:leaf"},
        "default:pair",
        r(
            "gemini",
            "gemini",
            "gemini-2.5-flash",
            "default:pair",
            "default:leaf",
            "default:leaf",
            "gemini:gemini-2.5-flash",
        ),
    ),
    # --- §3 Named Provider Instances ----------------------------------------------------------
    (
        "standard instance openai → real OpenAI",
        INSTANCES,
        "openai:gpt-4o",
        r("openai", "openai", "gpt-4o", "openai:gpt-4o"),
    ),
    (
        "named instance on the OpenAI wire",
        INSTANCES,
        "deepseek-direct:deepseek-v4-flash",
        r("openai", "deepseek-direct", "deepseek-v4-flash", "deepseek-direct:deepseek-v4-flash"),
    ),
    (
        "alias references the instance directly",
        INSTANCES,
        "default:analyze",
        r(
            "openai",
            "deepseek-direct",
            "deepseek-v4-flash",
            "default:analyze",
            "deepseek-direct:deepseek-v4-flash",
        ),
    ),
    (
        "a wire-type prefix is direct even when an alias of that name exists",
        {"ai.alias.openai.gpt-4o": "anthropic:claude-opus-4"},
        "openai:gpt-4o",
        r("openai", "openai", "gpt-4o", "openai:gpt-4o"),
    ),
    (
        "a named instance beats an alias of the same prefix",
        {"ai.provider.gw.type": "openai", "ai.alias.gw.fast": "anthropic:claude-haiku-4-5"},
        "gw:fast",
        r("openai", "gw", "fast", "gw:fast"),
    ),
    (
        "the tenant default may name an instance",
        {"ai.default.provider": "deepseek-direct", "ai.default.model": "deepseek-v4-pro", **INSTANCES},
        "default:unset",
        r("openai", "deepseek-direct", "deepseek-v4-pro", "default:unset", "deepseek-direct:deepseek-v4-pro"),
    ),
]


@pytest.mark.parametrize(("settings", "spec", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_seed_examples_resolve_as_the_seed_says(settings, spec, expected):
    assert resolve(spec, DictSettings(settings)) == expected


ERRORS = [
    (
        "unknown namespace and no alias",
        {},
        "cheap:lookup",
        "not_configured",
        "'cheap:lookup' is neither a provider type (openai, anthropic, gemini, ollama, ollama-cloud, lmstudio), "
        "a named instance (setting ai.provider.cheap.type) nor an alias (setting ai.alias.cheap.lookup)",
    ),
    (
        "last element unconfigured in a non-default namespace",
        {},
        "default:x,cheap:y",
        "not_configured",
        "'cheap:y' is neither a provider type (openai, anthropic, gemini, ollama, ollama-cloud, lmstudio), "
        "a named instance (setting ai.provider.cheap.type) nor an alias (setting ai.alias.cheap.y) "
        "(earlier elements not configured either: default:x)",
    ),
    (
        "default: without a tenant default",
        {},
        "default:chat",
        "no_default",
        "default:chat is not configured and there is no tenant default "
        "(settings ai.default.provider and ai.default.model)",
    ),
    ("empty spec without a tenant default", {}, " , ", "malformed", "',' has no usable elements"),
    (
        "a cycle",
        {"ai.alias.default.a": "default:b", "ai.alias.default.b": "default:a"},
        "default:a",
        "cycle",
        "alias cycle: default:a → default:b → default:a",
    ),
    (
        "a cycle inside a cascade value",
        {"ai.alias.default.chat": "default:loop,openai:gpt-4o", "ai.alias.default.loop": "default:chat"},
        "default:chat",
        "cycle",
        "alias cycle: default:chat → default:loop → default:chat",
    ),
    (
        "named instance of an unknown type",
        {"ai.provider.gw.type": "grpc"},
        "gw:model",
        "unknown_type",
        "ai.provider.gw.type is 'grpc', which is not a provider type "
        "(expected one of openai, anthropic, gemini, ollama, ollama-cloud, lmstudio)",
    ),
    (
        "tenant default naming nothing",
        {"ai.default.provider": "nobody", "ai.default.model": "m"},
        "default:x",
        "bad_default",
        "ai.default.provider is 'nobody', which is neither a provider type "
        "(openai, anthropic, gemini, ollama, ollama-cloud, lmstudio) nor a named instance (setting ai.provider.nobody.type)",
    ),
    (
        "an element without a colon",
        {},
        "gpt-4o",
        "malformed",
        "element 'gpt-4o' is not <provider>:<model> or <namespace>:<alias>; did you mean openai:gpt-4o?",
    ),
    (
        "a bare name that is an alias of the default namespace",
        {"ai.alias.default.fast": "openai:gpt-4o-mini"},
        "fast",
        "malformed",
        "element 'fast' is not <provider>:<model> or <namespace>:<alias>; did you mean default:fast?",
    ),
    (
        "an element with an empty model",
        {},
        "openai:",
        "malformed",
        "element 'openai:' is not <provider>:<model> or <namespace>:<alias>",
    ),
]


@pytest.mark.parametrize(
    ("settings", "spec", "code", "reason"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS]
)
def test_unresolvable_specs_raise_unknown_model_error_naming_the_spec_and_why(settings, spec, code, reason):
    with pytest.raises(UnknownModelError) as caught:
        resolve(spec, DictSettings(settings))
    err = caught.value
    assert (err.spec, err.code, err.reason) == (spec.strip(), code, reason)
    assert err.message == f"cannot resolve model spec {spec.strip()!r}: {reason}"
    assert isinstance(err, ConfigError) and err.exit_code == 2


def chain(length: int) -> dict[str, str]:
    """default:l1 → default:l2 → … → default:l{length-1} → openai:gpt-4o: `length` specs on the chain."""
    out = {f"ai.alias.default.l{i}": f"default:l{i + 1}" for i in range(1, length - 1)}
    out[f"ai.alias.default.l{length - 1}"] = "openai:gpt-4o"
    return out


def test_a_chain_of_eight_specs_resolves():
    assert MAX_DEPTH == 8
    found = resolve("default:l1", DictSettings(chain(8)))
    assert (found.protocol_type, found.model) == ("openai", "gpt-4o")
    assert found.path == (*(f"default:l{i}" for i in range(1, 8)), "openai:gpt-4o")


def test_depth_nine_is_refused():
    with pytest.raises(UnknownModelError) as caught:
        resolve("default:l1", DictSettings(chain(9)))
    assert caught.value.code == "too_deep"
    assert caught.value.reason == (
        "alias chain longer than 8 specs: "
        + " → ".join([*(f"default:l{i}" for i in range(1, 9)), "openai:gpt-4o"])
    )


def test_split_cascade_trims_and_skips_empty_elements():
    assert split_cascade("a , b") == split_cascade("a,b") == ["a", "b"]
    assert split_cascade("a,,b") == ["a", "b"]
    assert split_cascade(" , ,") == []


def test_resolution_json_has_the_cli_contract_shape():
    found = resolve(
        "default:arthur,default:chat", DictSettings({"ai.alias.default.chat": "gemini:gemini-2.5-flash"})
    )
    assert found.to_json("default:arthur,default:chat") == {
        "spec": "default:arthur,default:chat",
        "providerType": "gemini",
        "instance": "gemini",
        "model": "gemini-2.5-flash",
        "path": ["default:arthur", "default:chat", "gemini:gemini-2.5-flash"],
    }


def test_unknown_model_error_survives_pickling():
    with pytest.raises(UnknownModelError) as caught:
        resolve("cheap:lookup", DictSettings({}))
    clone = pickle.loads(pickle.dumps(caught.value))
    assert type(clone) is UnknownModelError
    assert (clone.spec, clone.code, clone.reason, clone.message) == (
        "cheap:lookup",
        "not_configured",
        caught.value.reason,
        caught.value.message,
    )


@pytest.mark.anyio
async def test_the_same_recipe_spec_lands_per_tenant_through_the_settings_cascade(tmp_path):
    """§3: "Tenant acme has default:arthur configured → claude-opus-4. Another Tenant without a
    default:arthur setting automatically falls back to default:chat → gemini-2.5-flash." """
    system = {
        "ai.alias.default.chat": "gemini:gemini-2.5-flash",
        "ai.default.provider": "openai",
        "ai.default.model": "gpt-4o-mini",
    }
    tenants = {
        "acme": {
            "settings": {"ai.alias.default.arthur": "anthropic:claude-opus-4"},
            "projects": {
                "review": {
                    "settings": {
                        "ai.alias.default.chat": "deepseek-direct:deepseek-v4-flash",
                        "ai.provider.deepseek-direct.type": "openai",
                    }
                }
            },
        },
        "globex": {"settings": {"ai.default.provider": "anthropic"}},
    }
    async with await open_runtime(tmp_path, system, tenants=tenants) as rt:
        spec = "default:arthur,default:chat"
        acme = resolve(spec, rt.settings.scoped(SearchScope("acme", "_tenant")))
        globex = resolve(spec, rt.settings.scoped(SearchScope("globex", "_tenant")))
        review = resolve("default:chat", rt.settings.scoped(SearchScope("acme", "review")))
        assert (acme.instance, acme.model) == ("anthropic", "claude-opus-4")
        assert (globex.instance, globex.model) == ("gemini", "gemini-2.5-flash")
        assert globex.path == ("default:arthur", "default:chat", "gemini:gemini-2.5-flash")
        assert (review.protocol_type, review.instance, review.model) == (
            "openai",
            "deepseek-direct",
            "deepseek-v4-flash",
        )
        # Nothing configured but the defaults: the tenant's own default provider wins over the system's.
        fallback = resolve("default:nothing", rt.settings.scoped(SearchScope("globex", "_tenant")))
        assert (fallback.instance, fallback.model) == ("anthropic", "gpt-4o-mini")


@pytest.mark.anyio
async def test_alias_table_lists_every_alias_with_its_resolution_or_error(tmp_path):
    settings = {"ai.alias.default.chat": "anthropic:claude-haiku-4-5", "ai.alias.default.broken": "nowhere:x"}
    async with await open_runtime(tmp_path, settings) as rt:
        table = alias_table(rt.settings.scoped(SearchScope()))
    assert table == [
        {
            "alias": "default:chat",
            "target": "anthropic:claude-haiku-4-5",
            "providerType": "anthropic",
            "instance": "anthropic",
            "model": "claude-haiku-4-5",
            "path": ["default:chat", "anthropic:claude-haiku-4-5"],
        },
        {
            "alias": "default:broken",
            "target": "nowhere:x",
            "error": "'nowhere:x' is neither a provider type (openai, anthropic, gemini, ollama, ollama-cloud, lmstudio), "
            "a named instance (setting ai.provider.nowhere.type) nor an alias (setting ai.alias.nowhere.x)",
        },
    ]

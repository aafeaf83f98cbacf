"""Model ids are data, never path (`llm/adapters/ids.py`): each wire admits its vendor's ids and
nothing else, before any request is built; a discovery listing cannot smuggle a path in either."""

from __future__ import annotations

import pytest

from zarniwoop.contract.errors import UnsafeValueError
from zarniwoop.contract.protocol import Secret
from zarniwoop.llm.adapters import ADAPTERS, ChatRequest, Endpoint
from zarniwoop.llm.adapters.ids import check_model, safe_listing
from zarniwoop.llm.catalog.listing import ListedModel
from zarniwoop.llm.choice.aliases import DictSettings, resolve

ADMITTED = [
    ("gemini", "gemini-2.5-pro"),
    ("gemini", "models/gemini-2.5-pro"),
    ("gemini", "tunedModels/my-model-7"),
    ("anthropic", "claude-sonnet-4-5"),
    ("anthropic", "claude-3-5-sonnet-20241022"),
    ("openai", "gpt-4o-mini"),
    ("openai", "ft:gpt-4o-mini:acme::B1x2"),
    ("openai", "meta-llama/llama-3.1-8b-instruct:free"),
    ("lmstudio", "qwen2.5-7b-instruct@q4_k_m"),
    ("ollama", "llama3.2:3b"),
    ("ollama", "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M"),
    ("ollama-cloud", "gpt-oss:120b"),
]

REFUSED = [
    ("gemini", "gemini-2.5-pro/../../../v1/admin", "only letters"),
    ("gemini", "../x", "start with a letter"),
    ("gemini", "a b", "only letters"),
    ("gemini", "%2e%2e", "start with a letter"),
    ("gemini", "gemini%2e%2e", "only letters"),
    ("gemini", "models/../x", "only letters"),
    ("gemini", "..", "start with a letter"),
    ("openai", "gpt/.", "a '.' segment"),
    ("gemini", "x?alt=sse", "only letters"),
    ("gemini", "x\r\nHost: evil", "only letters"),
    ("openai", "../../v1/files", "start with a letter"),
    ("openai", "gpt-4o/../../v1/files", "a '..' segment"),
    ("openai", "gpt-4o/%2e%2e/files", "only '/'-separated"),
    ("openai", "org//model", "an empty path segment"),
    ("anthropic", "claude/../x", "only letters"),
    ("ollama", "llama3/..", "a '..' segment"),
    ("ollama", "x" * 257, "longer than 256"),
]


@pytest.mark.parametrize(("wire", "model"), ADMITTED)
def test_each_wire_admits_its_vendors_ids(wire: str, model: str) -> None:
    assert check_model(wire, model) == model


@pytest.mark.parametrize(("wire", "model", "why"), REFUSED)
def test_each_wire_refuses_what_could_walk_a_path(wire: str, model: str, why: str) -> None:
    with pytest.raises(UnsafeValueError) as caught:
        check_model(wire, model)
    assert caught.value.field == "model"
    assert why in caught.value.reason


@pytest.mark.parametrize(
    "spec", ["gemini:gemini-2.5-pro/../../../v1/admin", "gemini:../x", "gemini:a b", "openai:../../v1/files"]
)
def test_the_resolver_refuses_before_any_candidate_exists(spec: str) -> None:
    with pytest.raises(UnsafeValueError) as caught:
        resolve(spec, DictSettings({}))
    assert caught.value.field == "model"


def test_an_alias_landing_on_a_bad_id_is_refused_too() -> None:
    settings = DictSettings({"ai.alias.default.sneaky": "gemini:x/../../v1/admin"})
    with pytest.raises(UnsafeValueError):
        resolve("default:sneaky", settings)


@pytest.mark.parametrize("wire", sorted(ADAPTERS))
def test_every_adapter_refuses_a_bad_id_at_build(wire: str) -> None:
    endpoint = Endpoint(wire, wire, "http://127.0.0.1:9", Secret("k"))
    with pytest.raises(UnsafeValueError):
        ADAPTERS[wire].build(ChatRequest.prompt("hi"), endpoint, "../../v1/admin")


def test_the_gemini_model_is_one_path_segment() -> None:
    endpoint = Endpoint("gemini", "gemini", "http://127.0.0.1:9", Secret("k"))
    for model, path in (
        ("gemini-2.5-pro", "/v1beta/models/gemini-2.5-pro:generateContent"),
        ("models/gemini-2.5-pro", "/v1beta/models/gemini-2.5-pro:generateContent"),
        ("tunedModels/mine-1", "/v1beta/tunedModels/mine-1:generateContent"),
    ):
        spec = ADAPTERS["gemini"].build(ChatRequest.prompt("hi"), endpoint, model)
        assert spec.url == "http://127.0.0.1:9" + path


def test_a_discovery_listing_keeps_only_admitted_ids() -> None:
    listed = [ListedModel("gemini-2.5-pro"), ListedModel("../../v1/admin"), ListedModel("a b")]
    assert [m.wire_name for m in safe_listing("gemini", "gemini", listed)] == ["gemini-2.5-pro"]

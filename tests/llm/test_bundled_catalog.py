"""The bundled catalog: current models of the six wire types, figures from the public LiteLLM price
and context file (../shared/fixtures/llm/catalog/), every document valid."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from zarniwoop.llm.adapters.wire import WIRE_TYPES
from zarniwoop.llm.catalog import BundledDocuments, Catalog, FileDocumentStore, ModelSize

from ..support.paths import fixture_bytes

pytestmark = pytest.mark.anyio


async def bundled_catalog(tmp_path) -> Catalog:
    catalog = Catalog(FileDocumentStore(tmp_path / "documents"))
    report = await catalog.refresh()
    assert report.skipped == ()
    assert report.bundled_models_loaded == len(BundledDocuments().documents())
    return catalog


async def test_every_wire_type_has_current_models_with_the_required_fields(tmp_path):
    catalog = await bundled_catalog(tmp_path)
    docs = catalog.models()
    per_instance = Counter(d.instance for d in docs)
    for wire_type in WIRE_TYPES:
        assert per_instance[wire_type] >= 4, wire_type
    assert per_instance["deepseek"] == 4  # the named-instance convention for DeepSeek's own API
    for doc in docs:
        where = f"{doc.instance}/{doc.wire_name}"
        assert doc.context_window_tokens and doc.context_window_tokens >= 8192, where
        assert doc.size in (ModelSize.SMALL, ModelSize.LARGE), where
        assert doc.kind == "chat", where
        assert doc.pricing is not None and doc.pricing.currency == "USD", where
        assert doc.pricing.input_per_mtok is not None and doc.pricing.output_per_mtok is not None, where
        assert doc.layers == ("bundled",), where
    sonnet = catalog.lookup("anthropic", "claude-sonnet-4-6")
    assert (sonnet.context_window_tokens, sonnet.default_max_output_tokens, sonnet.size) == (
        1000000,
        128000,
        ModelSize.LARGE,
    )
    assert (sonnet.pricing.input_per_mtok, sonnet.pricing.output_per_mtok) == (3.0, 15.0)
    assert (
        sonnet.has_capability("vision") and sonnet.has_capability("pdf") and sonnet.has_capability("thinking")
    )
    assert sonnet.cost_usd(2450, 890) == pytest.approx(2450 * 3 / 1e6 + 890 * 15 / 1e6)
    assert catalog.lookup("gemini", "gemini-2.5-flash").size is ModelSize.SMALL
    assert catalog.lookup("ollama-cloud", "gpt-oss:120b").parser == "harmony"
    assert catalog.lookup("deepseek", "deepseek-v4-pro").parser == "deepseek-v4"
    assert catalog.lookup("lmstudio", "google/gemma-4-26b-a4b").parser == "gemma4"
    assert catalog.lookup("lmstudio", "deepseek-r1").strip_think_tags is True


async def test_bundled_figures_match_the_public_source(tmp_path):
    source = json.loads(fixture_bytes("llm", "catalog", "model_prices_and_context_window.json"))
    catalog = await bundled_catalog(tmp_path)
    checked = 0
    for doc in catalog.models():
        origin = doc.fields["pricingSource"]
        if not origin.startswith("litellm:"):
            assert origin.startswith("local (free)") and doc.instance == "lmstudio"
            assert (doc.pricing.input_per_mtok, doc.pricing.output_per_mtok) == (0.0, 0.0)
            continue
        entry = source[origin.removeprefix("litellm:")]
        where = f"{doc.instance}/{doc.wire_name}"
        assert doc.context_window_tokens == entry["max_input_tokens"], where
        assert doc.default_max_output_tokens == entry["max_output_tokens"], where
        assert doc.pricing.input_per_mtok == pytest.approx(entry["input_cost_per_token"] * 1e6), where
        assert doc.pricing.output_per_mtok == pytest.approx(entry["output_cost_per_token"] * 1e6), where
        if entry.get("cache_read_input_token_cost") is not None:
            assert doc.pricing.cache_read_per_mtok == pytest.approx(
                entry["cache_read_input_token_cost"] * 1e6
            ), where
        assert doc.has_capability("tools") == bool(entry.get("supports_function_calling")), where
        assert doc.has_capability("vision") == bool(entry.get("supports_vision")), where
        assert doc.has_capability("thinking") == bool(entry.get("supports_reasoning")), where
        checked += 1
    assert checked >= 45


async def test_lmstudio_context_lengths_come_from_its_own_listing(tmp_path):
    catalog = await bundled_catalog(tmp_path)
    v0 = {
        m["id"]: m["max_context_length"]
        for m in json.loads(fixture_bytes("llm", "lmstudio", "api-v0-models.json"))["data"]
    }
    v1 = {
        m["key"]: m["max_context_length"]
        for m in json.loads(fixture_bytes("llm", "lmstudio", "api-v1-models.json"))["models"]
    }
    for doc in catalog.models(instance="lmstudio"):
        assert doc.context_window_tokens == {**v0, **v1}[doc.wire_name], doc.wire_name

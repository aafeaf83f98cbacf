"""The seven-layer merge of seed 002 §3a.3, table-driven over every layer.

bundled → (_system,_tenant) auto → manual → (acme,_tenant) auto → manual → (acme,review) auto → manual
"""

from __future__ import annotations

import pytest

from zarniwoop.contract import SearchScope
from zarniwoop.llm.catalog import ModelSize, deep_merge

from .catalog_support import LAYER_LABELS, Docs

pytestmark = pytest.mark.anyio

PROJECT = SearchScope("acme", "review")
TENANT = SearchScope("acme", "_tenant")
SYSTEM = SearchScope("_system", "_tenant")
ALL = list(LAYER_LABELS)

BASE = {
    "contextWindowTokens": 200000,
    "defaultMaxOutputTokens": 8192,
    "size": "LARGE",
    "capabilities": ["vision", "pdf", "thinking"],
    "pricing": {"currency": "USD", "inputPerMTok": 3.0, "outputPerMTok": 15.0, "cacheReadPerMTok": 0.3},
}

# (case id, {layer: fields}, scope looked up, expected fields (subset), expected contributing layers)
MERGE_CASES = [
    ("bundled alone is the base", {"bundled": BASE}, PROJECT, BASE, ["bundled"]),
    (
        "each layer overrides the one outside it (project scope sees the innermost)",
        {layer: {"contextWindowTokens": 1000 + i} for i, layer in enumerate(ALL)},
        PROJECT,
        {"contextWindowTokens": 1006},
        ALL,
    ),
    (
        "a tenant-scope lookup stops at the tenant's manual layer",
        {layer: {"contextWindowTokens": 1000 + i} for i, layer in enumerate(ALL)},
        TENANT,
        {"contextWindowTokens": 1004},
        ALL[:5],
    ),
    (
        "a system-scope lookup sees bundled and the system layers only",
        {layer: {"contextWindowTokens": 1000 + i} for i, layer in enumerate(ALL)},
        SYSTEM,
        {"contextWindowTokens": 1002},
        ALL[:3],
    ),
    (
        "inner-scope auto beats outer-scope manual (seed: 50000 over 100000)",
        {
            "bundled": BASE,
            "ten-manual": {"contextWindowTokens": 100000},
            "proj-auto": {"contextWindowTokens": 50000},
        },
        PROJECT,
        {"contextWindowTokens": 50000},
        ["bundled", "acme/_tenant manual", "acme/review auto"],
    ),
    (
        "... while the tenant itself still sees its manual value",
        {
            "bundled": BASE,
            "ten-manual": {"contextWindowTokens": 100000},
            "proj-auto": {"contextWindowTokens": 50000},
        },
        TENANT,
        {"contextWindowTokens": 100000},
        ["bundled", "acme/_tenant manual"],
    ),
    (
        "system auto beats bundled",
        {"bundled": BASE, "sys-auto": {"contextWindowTokens": 123456}},
        PROJECT,
        {"contextWindowTokens": 123456, "size": "LARGE"},
        ["bundled", "_system/_tenant auto"],
    ),
    (
        "manual beats auto within one scope",
        {"ten-auto": {"contextWindowTokens": 1, "kind": "chat"}, "ten-manual": {"contextWindowTokens": 2}},
        PROJECT,
        {"contextWindowTokens": 2, "kind": "chat"},
        ["acme/_tenant auto", "acme/_tenant manual"],
    ),
    (
        "manual beats auto within the project scope too",
        {"proj-manual": {"size": "SMALL"}, "proj-auto": {"size": "LARGE", "contextWindowTokens": 32768}},
        PROJECT,
        {"size": "SMALL", "contextWindowTokens": 32768},
        ["acme/review auto", "acme/review manual"],
    ),
    (
        "deep merge per field: an override of one price keeps the others",
        {"bundled": BASE, "ten-manual": {"pricing": {"inputPerMTok": 2.0}}},
        PROJECT,
        {"pricing": {"currency": "USD", "inputPerMTok": 2.0, "outputPerMTok": 15.0, "cacheReadPerMTok": 0.3}},
        ["bundled", "acme/_tenant manual"],
    ),
    (
        "lists are replaced as a whole: an owner can remove a capability",
        {
            "bundled": BASE,
            "sys-manual": {"capabilities": ["vision", "pdf", "thinking", "tools"]},
            "ten-manual": {"capabilities": ["vision"]},
        },
        PROJECT,
        {"capabilities": ["vision"]},
        ["bundled", "_system/_tenant manual", "acme/_tenant manual"],
    ),
    (
        "an empty list replaces too",
        {"bundled": BASE, "proj-manual": {"capabilities": []}},
        PROJECT,
        {"capabilities": []},
        ["bundled", "acme/review manual"],
    ),
    (
        "unset fields are inherited from outer layers",
        {"bundled": BASE, "proj-manual": {"size": "SMALL"}},
        PROJECT,
        {**BASE, "size": "SMALL"},
        ["bundled", "acme/review manual"],
    ),
    (
        "an auto document with no prices gets them from the manual layers",
        {"bundled": BASE, "proj-auto": {"contextWindowTokens": 1048576, "discoveredBy": "discovery-job"}},
        PROJECT,
        {"contextWindowTokens": 1048576, "pricing": BASE["pricing"], "discoveredBy": "discovery-job"},
        ["bundled", "acme/review auto"],
    ),
    (
        "explicit null replaces: pricing null means unpriced",
        {"bundled": BASE, "ten-manual": {"pricing": None}},
        PROJECT,
        {"pricing": None},
        ["bundled", "acme/_tenant manual"],
    ),
    (
        "all seven layers contribute one field each",
        {
            "bundled": {"capabilities": ["vision"]},
            "sys-auto": {"kind": "chat"},
            "sys-manual": {"pricing": {"inputPerMTok": 1.0}},
            "ten-auto": {"contextWindowTokens": 65536},
            "ten-manual": {"pricing": {"outputPerMTok": 4.0}},
            "proj-auto": {"defaultMaxOutputTokens": 4096},
            "proj-manual": {"size": "SMALL"},
        },
        PROJECT,
        {
            "capabilities": ["vision"],
            "kind": "chat",
            "pricing": {"inputPerMTok": 1.0, "outputPerMTok": 4.0},
            "contextWindowTokens": 65536,
            "defaultMaxOutputTokens": 4096,
            "size": "SMALL",
        },
        ALL,
    ),
]


@pytest.mark.parametrize(
    ("layers", "scope", "expected", "contributors"),
    [c[1:] for c in MERGE_CASES],
    ids=[c[0] for c in MERGE_CASES],
)
async def test_seven_layer_merge(tmp_path, layers, scope, expected, contributors):
    docs = Docs(tmp_path)
    for layer, fields in layers.items():
        docs.write(layer, "anthropic/claude-sonnet-4-6.yaml", fields)
    catalog = docs.catalog()
    report = await catalog.refresh()
    assert report.skipped == ()
    doc = catalog.lookup("anthropic", "claude-sonnet-4-6", scope)
    assert doc is not None
    assert {key: doc.fields.get(key) for key in expected} == expected
    assert list(doc.layers) == [LAYER_LABELS.get(layer, layer) for layer in contributors]


async def test_other_tenants_and_projects_never_leak_into_a_scope(tmp_path):
    docs = Docs(tmp_path)
    docs.write("bundled", "openai/gpt-4o.yaml", {"contextWindowTokens": 128000})
    docs.write("proj-manual", "openai/gpt-4o.yaml", {"contextWindowTokens": 1})
    (docs.root / "globex/_tenant/model/openai").mkdir(parents=True)
    (docs.root / "globex/_tenant/model/openai/gpt-4o.yaml").write_text("contextWindowTokens: 2\n")
    (docs.root / "acme/other/model/openai").mkdir(parents=True)
    (docs.root / "acme/other/model/openai/gpt-4o.yaml").write_text("contextWindowTokens: 3\n")
    catalog = docs.catalog()
    await catalog.refresh()
    assert catalog.lookup("openai", "gpt-4o", SearchScope("acme", "review")).context_window_tokens == 1
    assert catalog.lookup("openai", "gpt-4o", SearchScope("globex", "review")).context_window_tokens == 2
    assert catalog.lookup("openai", "gpt-4o", SearchScope("acme", "other")).context_window_tokens == 3
    assert catalog.lookup("openai", "gpt-4o", SearchScope("acme", "_tenant")).context_window_tokens == 128000
    assert catalog.lookup("openai", "gpt-4o").context_window_tokens == 128000


async def test_the_seeds_manual_example_document_loads_as_written(tmp_path):
    docs = Docs(tmp_path)
    docs.write(
        "sys-manual",
        "anthropic/claude-sonnet-4-6.yaml",
        """\
wireName: "claude-sonnet-4-6"    # only if different from path (e.g., Ollama tags)
contextWindowTokens: 200000
defaultMaxOutputTokens: 8192
size: LARGE                      # SMALL | LARGE — Recipe tier hint
kind: chat                       # chat | image (default chat)
capabilities:                    # List, replaced as a whole
  - vision
  - pdf
  - thinking
stripThinkTags: false            # default false — see §4.1
messageParser: null              # optional
pricing:                         # Hand-maintained in the manual layer (auto never writes this)
  currency: USD
  inputPerMTok: 3.00
  outputPerMTok: 15.00
  cacheReadPerMTok: 0.30
  cacheWritePerMTok: 3.75
discoveredBy: manual             # "manual" in manual path, "discovery-job" in auto path
discoveredAt: "2026-06-27T10:00:00Z"
""",
    )
    catalog = docs.catalog()
    await catalog.refresh()
    doc = catalog.lookup("anthropic", "claude-sonnet-4-6")
    assert doc.to_json() == {
        "instance": "anthropic",
        "wireName": "claude-sonnet-4-6",
        "slug": "claude-sonnet-4-6",
        "contextWindowTokens": 200000,
        "defaultMaxOutputTokens": 8192,
        "size": "LARGE",
        "kind": "chat",
        "capabilities": ["vision", "pdf", "thinking"],
        "stripThinkTags": False,
        "messageParser": None,
        "messageParserSource": "document",
        "pricing": {
            "currency": "USD",
            "inputPerMTok": 3.0,
            "outputPerMTok": 15.0,
            "cacheReadPerMTok": 0.3,
            "cacheWritePerMTok": 3.75,
        },
        "traits": {"contextDiscipline": None, "toolLoopPersistence": None},  # this document names none
        "displayName": None,
        "discoveredBy": "manual",
        "discoveredAt": "2026-06-27T10:00:00Z",
        "layers": ["_system/_tenant manual"],
        "known": True,
    }
    assert doc.size is ModelSize.LARGE
    assert doc.cost_usd(1_000_000, 100_000) == pytest.approx(3.0 + 1.5)
    assert doc.cost_usd(0, 0, cache_read=1_000_000, cache_write=1_000_000) == pytest.approx(0.3 + 3.75)


async def test_a_named_instance_carries_its_own_metadata_section(tmp_path):
    """§3: `deepseek-direct: deepseek-v4-flash: {contextWindowTokens: 1048576, size: SMALL}`."""
    docs = Docs(tmp_path)
    docs.write("bundled", "openai/deepseek-v4-flash.yaml", {"contextWindowTokens": 1000, "size": "LARGE"})
    docs.write(
        "ten-manual",
        "deepseek-direct/deepseek-v4-flash.yaml",
        {"contextWindowTokens": 1048576, "size": "SMALL"},
    )
    catalog = docs.catalog()
    await catalog.refresh()
    doc = catalog.lookup("deepseek-direct", "deepseek-v4-flash", TENANT)
    assert (doc.instance, doc.context_window_tokens, doc.size) == (
        "deepseek-direct",
        1048576,
        ModelSize.SMALL,
    )
    # The same wire name under another instance keeps its own metadata.
    assert catalog.lookup("openai", "deepseek-v4-flash", TENANT).context_window_tokens == 1000
    # A named instance without an entry inherits its type's when asked to.
    assert catalog.lookup("openai-eu", "deepseek-v4-flash", TENANT) is None
    assert (
        catalog.lookup("openai-eu", "deepseek-v4-flash", TENANT, fallback_instance="openai").size
        is ModelSize.LARGE
    )


async def test_wire_names_come_from_the_path_or_wire_name_and_overrides_inherit_it(tmp_path):
    """§3a.1: nested folders carry '/', `wireName` carries ':'; an override at the same path need
    not repeat the wireName."""
    docs = Docs(tmp_path)
    docs.write("bundled", "lmstudio/mlx-community/Qwen3.6-35B-A3B-4bit.yaml", {"contextWindowTokens": 32768})
    docs.write("sys-auto", "ollama/qwen3-30b.yaml", {"wireName": "qwen3:30b", "contextWindowTokens": 40960})
    docs.write("ten-manual", "ollama/qwen3-30b.yaml", {"size": "SMALL"})
    catalog = docs.catalog()
    await catalog.refresh()
    lm = catalog.lookup("lmstudio", "mlx-community/Qwen3.6-35B-A3B-4bit", PROJECT)
    assert (lm.wire_name, lm.slug, lm.context_window_tokens) == (
        "mlx-community/Qwen3.6-35B-A3B-4bit",
        "mlx-community/Qwen3.6-35B-A3B-4bit",
        32768,
    )
    qwen = catalog.lookup("ollama", "qwen3:30b", PROJECT)
    assert (qwen.wire_name, qwen.slug, qwen.context_window_tokens, qwen.size) == (
        "qwen3:30b",
        "qwen3-30b",
        40960,
        ModelSize.SMALL,
    )
    assert qwen.layers == ("_system/_tenant auto", "acme/_tenant manual")
    assert catalog.lookup("ollama", "qwen3-30b", PROJECT) == qwen  # by file slug too
    assert [d.wire_name for d in catalog.models(PROJECT)] == [
        "mlx-community/Qwen3.6-35B-A3B-4bit",
        "qwen3:30b",
    ]


def test_deep_merge_replaces_lists_and_merges_mappings():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": [1, 2, 3], "c": 1}
    assert deep_merge(base, {"a": {"y": [3]}, "b": [], "c": None}) == {
        "a": {"x": 1, "y": [3]},
        "b": [],
        "c": None,
    }
    assert base == {"a": {"x": 1, "y": [1, 2]}, "b": [1, 2, 3], "c": 1}  # inputs untouched

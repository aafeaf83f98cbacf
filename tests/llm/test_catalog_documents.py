"""Catalog documents: bad ones are skipped with a warning naming the file while the rest loads;
the file store stays inside its folder; the first-boot bootstrap never overwrites an operator."""

from __future__ import annotations

import logging

import pytest
import yaml

from zarniwoop.contract import InvalidRequestError, SearchScope
from zarniwoop.contract.errors import BadPathError
from zarniwoop.llm.catalog import (
    BundledDocuments,
    FileDocumentStore,
    bootstrap_bundled,
    parse_doc_path,
    slug_for,
)
from zarniwoop.llm.catalog.bootstrap import LEDGER_PATH
from zarniwoop.llm.catalog.paths import DocPath

from .catalog_support import Docs

pytestmark = pytest.mark.anyio

# libyaml and the pure-Python loader word the problem differently; the position is the same.
YAML_PROBLEM = "invalid YAML: line 2, column 5: ..."

BAD_DOCUMENTS = [
    (
        "sys-manual",
        "openai/broken.yaml",
        "contextWindowTokens: [1, 2\nsize: LARGE\n",
        YAML_PROBLEM,
    ),
    (
        "sys-manual",
        "openai/gpt 4o.yaml",
        "size: LARGE\n",
        "bad path: file slug segment 'gpt 4o' must match [A-Za-z0-9._-]+",
    ),
    (
        "ten-manual",
        "OpenAI/gpt-4o.yaml",
        "size: LARGE\n",
        "bad path: provider instance folder 'OpenAI' must match [a-z0-9._-]+",
    ),
    ("ten-auto", "openai/gpt-4o.yaml", "size: HUGE\n", "unknown size 'HUGE'; expected SMALL or LARGE"),
    (
        "proj-manual",
        "openai/gpt-4.1.yaml",
        "contextWindowTokens: lots\n",
        "contextWindowTokens must be a positive integer, got 'lots'",
    ),
    ("proj-auto", "openai/o3.yaml", "- just\n- a list\n", "expected a mapping of fields, got list"),
    (
        "proj-auto",
        "openai/o4-mini.yaml",
        "pricing: {inputPerMTok: -1}\n",
        "pricing.inputPerMTok must be a number ≥ 0 (per million tokens), got -1",
    ),
    (
        "proj-auto",
        "openai/gpt-5.yaml",
        "capabilities: vision\n",
        "capabilities must be a list of names, got 'vision'",
    ),
]


async def test_bad_documents_are_skipped_with_a_warning_naming_the_file_and_the_rest_loads(tmp_path, caplog):
    docs = Docs(tmp_path)
    docs.write("bundled", "openai/gpt-4o.yaml", {"contextWindowTokens": 128000, "size": "LARGE"})
    docs.write("sys-manual", "openai/gpt-4o-mini.yaml", {"contextWindowTokens": 128000, "size": "SMALL"})
    docs.write("proj-manual", "openai/gpt-4o-mini.yaml", {"defaultMaxOutputTokens": 16384})
    files = {docs.write(layer, relative, text): reason for layer, relative, text, reason in BAD_DOCUMENTS}
    unreadable = docs.path("sys-manual", "openai/latin1.yaml")
    unreadable.write_bytes("displayName: Caf\xe9\n".encode("latin-1"))
    (docs.root / "_system/_tenant/model/stray.yaml").write_text("size: SMALL\n")
    docs.write("sys-manual", "openai/README.md", "notes are not documents")
    catalog = docs.catalog()
    with caplog.at_level(logging.WARNING, logger="zarniwoop.llm.catalog"):
        report = await catalog.refresh()

    skipped = {s.source: s.reason for s in report.skipped}
    for file, reason in files.items():
        found = skipped.pop(str(file))
        if reason == YAML_PROBLEM:
            assert found.startswith("invalid YAML: line 2, column 5: ") and "expected ',' or ']'" in found
            files[file] = found
        else:
            assert found == reason
    assert skipped.pop(str(unreadable)).startswith("cannot read: 'utf-8' codec can't decode byte 0xe9")
    assert skipped.pop(str(docs.root / "_system/_tenant/model/stray.yaml")) == (
        "bad path: expected <instance>/<slug>.yaml, got 'stray.yaml'"
    )
    assert skipped == {}
    warned = [r.getMessage() for r in caplog.records]
    for file, reason in files.items():
        assert f"skipping catalog document {file}: {reason}" in warned

    # The good documents loaded; a skipped override leaves the outer layers' values in place.
    scope = SearchScope("acme", "review")
    mini = catalog.lookup("openai", "gpt-4o-mini", scope)
    assert (mini.context_window_tokens, mini.default_max_output_tokens, mini.size.value) == (
        128000,
        16384,
        "SMALL",
    )
    gpt4o = catalog.lookup("openai", "gpt-4o", scope)
    assert (gpt4o.size.value, gpt4o.layers) == ("LARGE", ("bundled",))  # the HUGE auto override was skipped
    assert catalog.lookup("openai", "broken", scope) is None
    assert report.to_json()["skipped"][0].keys() == {"file", "reason"}


async def test_an_unknown_message_parser_drops_that_field_only(tmp_path, caplog):
    """A parser name this release does not know (a typo, or one added later) costs the document
    only its `messageParser`: size, context window and pricing load, the name-pattern parser of
    `model-quirks.yaml` applies, and the refresh names the file and the field."""
    docs = Docs(tmp_path)
    fields = {
        "size": "LARGE",
        "contextWindowTokens": 262144,
        "messageParser": "llama-magic",
        "pricing": {"inputPerMTok": 0.5, "outputPerMTok": 1.5},
    }
    file = docs.write("proj-manual", "lmstudio/google/gemma-4-26b-a4b.yaml", fields)
    catalog = docs.catalog()
    with caplog.at_level(logging.WARNING, logger="zarniwoop.llm.catalog"):
        report = await catalog.refresh()
    doc = catalog.lookup("lmstudio", "google/gemma-4-26b-a4b", SearchScope("acme", "review"))
    assert doc is not None
    assert (
        doc.size.value,
        doc.context_window_tokens,
        doc.pricing.input_per_mtok,
        doc.pricing.output_per_mtok,
    ) == (
        "LARGE",
        262144,
        0.5,
        1.5,
    )
    assert (doc.parser, doc.parser_source) == ("gemma4", "quirks")
    reason = "unknown messageParser 'llama-magic' ignored (known: deepseek-v4, gemma4, harmony); the other fields apply"
    assert report.skipped == ()
    assert report.to_json()["ignoredFields"] == [{"file": str(file), "reason": reason}]
    assert f"catalog document {file}: {reason}" in [r.getMessage() for r in caplog.records]


PATHS = [
    ("openai/gpt-4o.yaml", DocPath("openai", "gpt-4o")),
    (
        "lmstudio/mlx-community/Qwen3.6-35B-A3B-4bit.yaml",
        DocPath("lmstudio", "mlx-community/Qwen3.6-35B-A3B-4bit"),
    ),
    ("deepseek-direct/deepseek-v4-flash.yaml", DocPath("deepseek-direct", "deepseek-v4-flash")),
    ("ollama/qwen3-30b.yaml", DocPath("ollama", "qwen3-30b")),
]


@pytest.mark.parametrize(("relative", "expected"), PATHS)
def test_document_paths_follow_the_naming_convention(relative, expected):
    assert parse_doc_path(relative) == expected


@pytest.mark.parametrize(
    ("relative", "reason"),
    [
        ("Ollama/x.yaml", "provider instance folder 'Ollama' must match [a-z0-9._-]+"),
        ("ollama/qwen3:30b.yaml", "file slug segment 'qwen3:30b' must match [A-Za-z0-9._-]+"),
        ("ollama/../x.yaml", "file slug segment '..' must match [A-Za-z0-9._-]+"),
        ("x.yaml", "expected <instance>/<slug>.yaml, got 'x.yaml'"),
        ("ollama/x.yml", "expected <instance>/<slug>.yaml, got 'ollama/x.yml'"),
    ],
)
def test_bad_paths_name_the_part_that_is_wrong(relative, reason):
    with pytest.raises(BadPathError) as caught:
        parse_doc_path(relative)
    assert str(caught.value) == reason


@pytest.mark.parametrize(
    ("wire", "slug"),
    [
        ("gpt-4o", "gpt-4o"),
        ("qwen3:30b", "qwen3-30b"),
        ("mattshumer/reflection-70b:free", "mattshumer/reflection-70b-free"),
        ("google/gemma-4-26b-a4b", "google/gemma-4-26b-a4b"),
        ("weird name@v1", "weird-name-v1"),
        ("../../etc/passwd", "--/--/etc/passwd"),
        ("/leading/slash", "leading/slash"),
    ],
)
def test_slugs_keep_slashes_as_folders_and_replace_unsafe_characters(wire, slug):
    assert slug_for(wire) == slug
    assert parse_doc_path(f"x/{slug}.yaml").slug == slug


async def test_the_file_store_refuses_paths_outside_its_folder(tmp_path):
    store = FileDocumentStore(tmp_path / "documents")
    for tenant, project, path in [
        ("..", "_tenant", "model/a/b.yaml"),
        ("acme", "../x", "model/a/b.yaml"),
        ("acme", "_tenant", "model/../../../escape.yaml"),
        ("acme", "_tenant", "/etc/passwd"),
        ("acme", "_tenant", "model//b.yaml"),
    ]:
        with pytest.raises(InvalidRequestError):
            await store.write(tenant, project, path, "size: SMALL\n")
    assert not (tmp_path / "escape.yaml").exists()
    await store.write("acme", "_tenant", "model-auto/ollama/deep/er/x.yaml", "size: SMALL\n")
    assert await store.list_paths("acme", "_tenant", "model-auto/ollama/") == [
        "model-auto/ollama/deep/er/x.yaml"
    ]
    assert await store.delete("acme", "_tenant", "model-auto/ollama/deep/er/x.yaml") is True
    assert not (tmp_path / "documents/acme/_tenant/model-auto/ollama/deep").exists()  # emptied folders go too
    assert await store.delete("acme", "_tenant", "model-auto/ollama/deep/er/x.yaml") is False


async def test_first_boot_bootstrap_copies_the_bundled_documents_and_never_overwrites_edits(tmp_path):
    docs = Docs(tmp_path)
    docs.write("bundled", "openai/gpt-4o.yaml", {"contextWindowTokens": 128000, "size": "LARGE"})
    docs.write("bundled", "anthropic/claude-haiku-4-5.yaml", {"contextWindowTokens": 200000, "size": "SMALL"})
    bundled = BundledDocuments(docs.bundled_root)
    system = docs.root / "_system/_tenant"

    first = await bootstrap_bundled(docs.store, bundled)
    assert first.copied == ("model/anthropic/claude-haiku-4-5.yaml", "model/openai/gpt-4o.yaml")
    assert yaml.safe_load((system / "model/openai/gpt-4o.yaml").read_text()) == {
        "contextWindowTokens": 128000,
        "size": "LARGE",
    }
    assert not (system / "model-auto").exists()  # auto is discovery's
    assert yaml.safe_load((system / LEDGER_PATH).read_text())["offered"] == list(first.copied)

    # The operator edits one document and deletes the other; a new version bundles a third model.
    (system / "model/openai/gpt-4o.yaml").write_text("contextWindowTokens: 64000\nsize: LARGE\n")
    (system / "model/anthropic/claude-haiku-4-5.yaml").unlink()
    docs.write("bundled", "gemini/gemini-2.5-flash.yaml", {"contextWindowTokens": 1048576, "size": "SMALL"})

    second = await bootstrap_bundled(docs.store, bundled)
    assert second.copied == ("model/gemini/gemini-2.5-flash.yaml",)
    assert second.kept == ("model/openai/gpt-4o.yaml",)
    assert second.withheld == ("model/anthropic/claude-haiku-4-5.yaml",)
    assert (system / "model/openai/gpt-4o.yaml").read_text() == "contextWindowTokens: 64000\nsize: LARGE\n"
    assert not (system / "model/anthropic/claude-haiku-4-5.yaml").exists()

    catalog = docs.catalog()
    await catalog.refresh()
    assert catalog.lookup("openai", "gpt-4o").context_window_tokens == 64000  # the edit wins over bundled
    assert catalog.lookup("anthropic", "claude-haiku-4-5").layers == ("bundled",)  # still known, from bundled


async def test_bootstrap_adds_missing_models_when_the_system_scope_already_has_documents(tmp_path):
    """An installation from before the ledger existed: existing documents stay, missing ones arrive."""
    docs = Docs(tmp_path)
    docs.write("bundled", "openai/gpt-4o.yaml", {"size": "LARGE"})
    docs.write("bundled", "openai/gpt-4o-mini.yaml", {"size": "SMALL"})
    docs.write("sys-manual", "openai/gpt-4o.yaml", {"size": "SMALL"})
    report = await bootstrap_bundled(docs.store, BundledDocuments(docs.bundled_root))
    assert (report.copied, report.kept) == (("model/openai/gpt-4o-mini.yaml",), ("model/openai/gpt-4o.yaml",))
    assert yaml.safe_load(docs.path("sys-manual", "openai/gpt-4o.yaml").read_text()) == {"size": "SMALL"}

"""The sanitizer and the decorator chain: the parser cascade (document beats quirks), think stripping,
the trace layer keeping the raw response (seed 002 §4.1, §4.1.1)."""

from __future__ import annotations

import logging
from importlib import resources

import pytest

from zarniwoop.contract import SearchScope
from zarniwoop.llm import parsers as parser_registry
from zarniwoop.llm.adapters.response import ChatResponse, TokenUsage, ToolCall
from zarniwoop.llm.chain import SanitizingChatModel, TracingChatModel, decorate
from zarniwoop.llm.parsers import default_quirks, parse_quirks, parser_names, register_parser
from zarniwoop.llm.sanitize import sanitize

from .catalog_support import Docs

pytestmark = pytest.mark.anyio

GEMMA_TEXT = "call:write_file{content:hello,path:a.txt}"
GEMMA_CALL = ToolCall("gemma4_call_0", "write_file", '{"content": "hello", "path": "a.txt"}')


class FakeProviderModel:
    """Stands in for a chat adapter (the next layer builds the real ones): returns a fixed raw response."""

    def __init__(self, response: ChatResponse) -> None:
        self.response = response
        self.requests: list[object] = []

    async def chat(self, request):
        self.requests.append(request)
        return self.response


class ListSink:
    def __init__(self) -> None:
        self.records: list[tuple[object, ChatResponse]] = []

    def record(self, request, response):
        self.records.append((request, response))


async def catalog_with(tmp_path, layers: dict[str, dict[str, dict]]):
    docs = Docs(tmp_path)
    for layer, files in layers.items():
        for relative, fields in files.items():
            docs.write(layer, relative, fields)
    catalog = docs.catalog()
    assert (await catalog.refresh()).skipped == ()
    return catalog


async def test_the_message_parser_cascade_document_beats_quirks_and_inner_beats_outer(tmp_path):
    """§4.1.1: project > _tenant > _vance > bundled per-model YAML > model-quirks.yaml > none."""
    catalog = await catalog_with(
        tmp_path,
        {
            "bundled": {
                "lmstudio/google/gemma-4-26b-a4b.yaml": {"size": "SMALL"},
                "lmstudio/plain-model.yaml": {"size": "SMALL"},
                "openai/gpt-oss-120b.yaml": {"messageParser": "deepseek-v4"},
            },
            "sys-manual": {"lmstudio/google/gemma-4-26b-a4b.yaml": {"messageParser": "harmony"}},
            "ten-manual": {"lmstudio/google/gemma-4-26b-a4b.yaml": {"messageParser": None}},
            "proj-manual": {"lmstudio/google/gemma-4-26b-a4b.yaml": {"messageParser": "gemma4"}},
        },
    )

    def parser(instance, model, scope=None):
        doc = catalog.lookup(instance, model, scope)
        return doc.parser, doc.parser_source

    assert parser("lmstudio", "google/gemma-4-26b-a4b", SearchScope("acme", "review")) == (
        "gemma4",
        "document",
    )
    assert parser("lmstudio", "google/gemma-4-26b-a4b", SearchScope("acme", "_tenant")) == (
        None,
        "document",
    )  # explicit null
    assert parser("lmstudio", "google/gemma-4-26b-a4b", SearchScope("globex", "_tenant")) == (
        "harmony",
        "document",
    )
    assert parser("openai", "gpt-oss-120b") == (
        "deepseek-v4",
        "document",
    )  # bundled per-model beats the pattern
    assert parser("lmstudio", "plain-model") == (None, None)

    raw = ChatResponse(text=GEMMA_TEXT)
    assert sanitize(
        raw, catalog.lookup("lmstudio", "google/gemma-4-26b-a4b", SearchScope("acme", "review"))
    ).tool_calls == (GEMMA_CALL,)
    assert (
        sanitize(raw, catalog.lookup("lmstudio", "google/gemma-4-26b-a4b", SearchScope("acme", "_tenant")))
        is raw
    )


async def test_quirk_rules_apply_when_no_document_names_a_parser(tmp_path):
    catalog = await catalog_with(
        tmp_path,
        {
            "bundled": {
                "lmstudio/google/gemma-4-26b-a4b.yaml": {"size": "SMALL"},
                "ollama/deepseek-r1-8b.yaml": {"wireName": "deepseek-r1:8b"},
            }
        },
    )
    gemma = catalog.lookup("lmstudio", "google/gemma-4-26b-a4b")
    assert (gemma.parser, gemma.parser_source, gemma.strip_think_tags) == ("gemma4", "quirks", False)
    r1 = catalog.lookup("ollama", "deepseek-r1:8b")
    assert (r1.parser, r1.parser_source, r1.strip_think_tags) == (None, "quirks", True)


async def test_a_document_can_turn_think_stripping_off(tmp_path):
    catalog = await catalog_with(
        tmp_path,
        {
            "ten-manual": {
                "ollama/deepseek-r1-8b.yaml": {"wireName": "deepseek-r1:8b", "stripThinkTags": False}
            }
        },
    )
    doc = catalog.lookup("ollama", "deepseek-r1:8b", SearchScope("acme", "_tenant"))
    raw = ChatResponse(text="<think>hmm</think>Hi")
    assert doc.strip_think_tags is False
    assert sanitize(raw, doc) is raw
    assert sanitize(raw, None, wire_name="deepseek-r1:8b") == ChatResponse(text="Hi", reasoning="hmm")


def test_quirk_globs_are_case_insensitive_and_the_first_match_wins():
    quirks = parse_quirks(
        'rules:\n  - {match: "gemma-4-?b*", messageParser: harmony}\n  - {match: "GEMMA-4*", messageParser: gemma4}\n'
        '  - {match: "*r1*", stripThinkTags: true}\n',
        "test quirks",
        parser_names(),
    )
    assert quirks.match("Gemma-4-9b-it").message_parser == "harmony"  # ? = exactly one character
    assert quirks.match("gemma-4-31b-it").message_parser == "gemma4"  # '?b' does not match '31b'
    assert quirks.match("GEMMA-4-E4B").message_parser == "gemma4"
    assert quirks.match("deepseek-r1:8b").strip_think_tags is True
    assert quirks.match("gpt-4o") is None
    assert quirks.match("xgemma-4") is None  # the glob matches the whole name


def test_bad_quirk_rules_are_skipped_with_a_warning(caplog):
    text = (
        "rules:\n"
        '  - {match: "a*", messageParser: nonsense}\n'
        '  - {match: "b*"}\n'
        "  - {messageParser: gemma4}\n"
        '  - {match: "c*", stripThinkTags: maybe}\n'
        '  - {match: "d*", messageParser: gemma4}\n'
    )
    with caplog.at_level(logging.WARNING):
        quirks = parse_quirks(text, "site quirks.yaml", parser_names())
    assert [r.match for r in quirks.rules] == ["d*"]
    assert [r.getMessage() for r in caplog.records] == [
        "skipping rule 1 of site quirks.yaml: unknown messageParser 'nonsense'; known: deepseek-v4, gemma4, harmony",
        "skipping rule 2 of site quirks.yaml: sets neither messageParser nor stripThinkTags",
        "skipping rule 3 of site quirks.yaml: expected a mapping with a non-empty 'match' glob",
        "skipping rule 4 of site quirks.yaml: stripThinkTags must be true or false, got 'maybe'",
    ]


def test_the_bundled_quirk_rules_all_load_and_route_the_known_families(caplog):
    with caplog.at_level(logging.WARNING):
        text = (resources.files("zarniwoop.llm.parsers") / "model-quirks.yaml").read_text(encoding="utf-8")
        quirks = parse_quirks(text, "bundled", parser_names())
    assert caplog.records == []
    assert len(quirks.rules) == len(default_quirks().rules) == 9
    routes = {
        name: quirks.match(name)
        for name in (
            "deepseek-v4-pro",
            "deepseek/deepseek-v4-flash",
            "deepseek-chat",
            "deepseek-v3.2",
            "gemma-4-31b-it",
            "google/gemma-4-26b-a4b",
            "gemma4:e4b",
            "gpt-oss-120b",
            "openai/gpt-oss-20b",
            "gpt-oss:20b-cloud",
            "deepseek-r1:671b",
            "deepseek-r1-distill-llama-70b",
            "qwq-32b",
            "qwen3:30b",
            "gpt-4o",
            "claude-sonnet-4-6",
        )
    }
    assert {k: (v.message_parser, v.strip_think_tags) if v else None for k, v in routes.items()} == {
        "deepseek-v4-pro": ("deepseek-v4", None),
        "deepseek/deepseek-v4-flash": ("deepseek-v4", None),
        "deepseek-chat": ("deepseek-v4", None),
        "deepseek-v3.2": ("deepseek-v4", None),
        "gemma-4-31b-it": ("gemma4", None),
        "google/gemma-4-26b-a4b": ("gemma4", None),
        "gemma4:e4b": ("gemma4", None),
        "gpt-oss-120b": ("harmony", None),
        "openai/gpt-oss-20b": ("harmony", None),
        "gpt-oss:20b-cloud": ("harmony", None),
        "deepseek-r1:671b": (None, True),
        "deepseek-r1-distill-llama-70b": (None, True),
        "qwq-32b": (None, True),
        "qwen3:30b": (None, True),
        "gpt-4o": None,
        "claude-sonnet-4-6": None,
    }


def test_a_failing_parser_is_logged_and_the_raw_response_passes(caplog, monkeypatch):
    class Exploding:
        name = "exploding"

        def parse(self, response):
            raise RuntimeError("bug in a parser")

    monkeypatch.setattr(parser_registry, "_PARSERS", dict(parser_registry._PARSERS))
    register_parser(Exploding())
    quirks = parse_quirks('rules: [{match: "boom*", messageParser: exploding}]', "q", parser_names())
    raw = ChatResponse(text="anything")
    with caplog.at_level(logging.ERROR):
        assert sanitize(raw, None, wire_name="boom-1", quirks=quirks) is raw
    assert "message parser 'exploding' failed; response passed through" in caplog.text


async def test_the_chain_traces_the_raw_response_and_returns_the_clean_one(tmp_path):
    catalog = await catalog_with(
        tmp_path, {"bundled": {"lmstudio/google/gemma-4-26b-a4b.yaml": {"size": "SMALL"}}}
    )
    doc = catalog.lookup("lmstudio", "google/gemma-4-26b-a4b")
    raw = ChatResponse(
        text=f"<think>pick a tool</think>{GEMMA_TEXT}", usage=TokenUsage(12, 34), finish_reason="stop"
    )
    provider = FakeProviderModel(raw)
    sink = ListSink()
    chain = decorate(provider, doc, trace_sink=sink)
    assert isinstance(chain, SanitizingChatModel) and isinstance(chain.inner, TracingChatModel)

    clean = await chain.chat({"messages": ["hi"]})
    # Gemma's parser leaves the think block as prose; the strip stage only runs where the model
    # strips think tags — this one does not, so the prose stays (exactly as the raw said it).
    assert clean == ChatResponse(
        text="<think>pick a tool</think>",
        tool_calls=(GEMMA_CALL,),
        usage=TokenUsage(12, 34),
        finish_reason="stop",
    )
    assert sink.records == [({"messages": ["hi"]}, raw)]  # the trace saw the markup
    assert provider.requests == [{"messages": ["hi"]}]


async def test_models_that_need_nothing_get_no_sanitizing_layer(tmp_path):
    catalog = await catalog_with(tmp_path, {"bundled": {"openai/gpt-4o.yaml": {"size": "LARGE"}}})
    raw = ChatResponse(text="<think>not a reasoning model</think>ok")
    chain = decorate(FakeProviderModel(raw), catalog.lookup("openai", "gpt-4o"))
    assert isinstance(chain, TracingChatModel)
    assert await chain.chat("q") is raw


async def test_unknown_models_are_sanitized_by_wire_name(tmp_path):
    catalog = await catalog_with(tmp_path, {})
    stand_in = catalog.lookup_or_default("ollama", "deepseek-r1:14b")
    assert (stand_in.known, stand_in.strip_think_tags, stand_in.pricing, stand_in.cost_usd(10, 10)) == (
        False,
        True,
        None,
        None,
    )
    chain = decorate(FakeProviderModel(ChatResponse(text="<think>x</think>y")), stand_in)
    assert await chain.chat("q") == ChatResponse(text="y", reasoning="x")
    direct = decorate(FakeProviderModel(ChatResponse(text="<think>x</think>y")), None, wire_name="qwq-32b")
    assert await direct.chat("q") == ChatResponse(text="y", reasoning="x")

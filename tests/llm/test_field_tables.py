"""The request-field tables (issue 43, `llm/adapters/fields.py`): the one in docs/llm-calls.md says
what the data says, every wire's table names the same fields, and the judging functions forward,
map or refuse — a neutral value passing a wire without the field."""

from __future__ import annotations

import re
from typing import Any

import pytest

from zarniwoop.contract.errors import InvalidRequestError
from zarniwoop.llm.adapters.fields import (
    BRIDGED,
    CHAT,
    FIELD_TABLES,
    MESSAGES,
    passed_fields,
    refuse_fields,
    route,
    thinking_budget,
)

from ..support.paths import REPO_ROOT

WIRES = ("anthropic", "gemini", "ollama")


def _doc_rows() -> dict[str, tuple[str, ...]]:
    text = (REPO_ROOT / "docs" / "llm-calls.md").read_text()
    section = text[text.index("**Every request field is forwarded, mapped or refused") :]
    rows: dict[str, tuple[str, ...]] = {}
    for line in section.splitlines()[1:]:
        line = line.strip()
        if rows and not line.startswith("|"):
            break
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = tuple(cells[1:])
    return rows


def test_the_documented_table_is_the_data() -> None:
    rows = _doc_rows()
    assert rows, "the table is gone from docs/llm-calls.md"
    for name, cells in rows.items():
        for wire, cell in zip(WIRES, cells, strict=True):
            fate = route(CHAT, wire, name)
            if cell == "400":
                assert fate.how == "refused", (name, wire)
            elif fate.path:
                assert cell.startswith(f"`{fate.path}"), (name, wire, cell, fate.path)
            else:
                assert fate.how == "mapped", (name, wire, cell)
    # every field a wire treats on its own is in the documented table
    for wire in WIRES:
        own = {n for n, r in FIELD_TABLES[(CHAT, wire)].items() if r.how == "refused" or r.path}
        assert own <= set(rows), (wire, own - set(rows))


def test_every_wire_names_the_same_fields() -> None:
    names = {wire: set(FIELD_TABLES[(CHAT, wire)]) for wire in ("openai", *WIRES)}
    assert all(n == names["openai"] for n in names.values())


def test_unknown_fields_are_forwarded_on_the_native_wire_only() -> None:
    assert route(CHAT, "openai", "zz_new").how == "forwarded"
    assert route(CHAT, "lmstudio", "zz_new").how == "forwarded"  # judged by the OpenAI table
    assert route(CHAT, "ollama-cloud", "zz_new").how == "refused"
    with pytest.raises(InvalidRequestError) as caught:
        refuse_fields(CHAT, "gemini", ["top_p", "zz_new"])
    assert caught.value.field == "zz_new" and "gemini wire" in caught.value.message


def test_neutral_values_pass_and_others_are_refused_or_kept() -> None:
    sent = {"n": 1, "service_tier": "auto", "store": False, "verbosity": None, "frequency_penalty": 0.2}
    assert passed_fields(CHAT, "gemini", sent) == {"frequency_penalty": 0.2}
    forwarded = {k: v for k, v in sent.items() if k != "n"}  # `n` is the gateway's own, on every wire
    assert passed_fields(CHAT, "openai", sent) == forwarded  # forwarded as sent, neutral or not
    with pytest.raises(InvalidRequestError) as caught:
        passed_fields(CHAT, "anthropic", {"service_tier": "flex"})
    assert caught.value.field == "service_tier"


def test_the_other_shapes_bridges_are_tables_of_the_same_kind() -> None:
    from zarniwoop.llm.adapters.fields import RESPONSES, bridge_refusals

    assert route(RESPONSES, BRIDGED, "max_output_tokens").path == "max_tokens"
    assert route(MESSAGES, BRIDGED, "stop_sequences").path == "stop"
    sent = {"service_tier": "flex", "include": [], "truncation": "disabled", "x_new": 1, "top_p": 0.5}
    assert [name for name, _ in bridge_refusals(RESPONSES, sent, "unknown")] == ["service_tier", "x_new"]
    assert (
        bridge_refusals(MESSAGES, {"thinking": "disabled", "top_k": None, "metadata.user_id": "u"}, "?") == []
    )
    [(name, reason)] = bridge_refusals(MESSAGES, {"anthropic-workspace-id": "wrkspc_1"}, "?")
    assert name == "anthropic-workspace-id" and "Anthropic wire" in reason
    # `thinking` and `top_k` cross the bridge into the chat form, whose tables judge them per wire
    enabled = {"type": "enabled", "budget_tokens": 1024}
    assert bridge_refusals(MESSAGES, {"thinking": enabled, "top_k": 5}, "?") == []
    assert (route(MESSAGES, BRIDGED, "thinking").path, route(MESSAGES, BRIDGED, "top_k").path) == (
        "thinking",
        "top_k",
    )


def test_thinking_and_top_k_per_wire_and_forwarded_only_for_a_chat_client_on_openai() -> None:
    paths = {wire: (route(CHAT, wire, "thinking").path, route(CHAT, wire, "top_k").path) for wire in WIRES}
    assert paths == {
        "anthropic": ("", "top_k"),
        "gemini": ("generationConfig.thinkingConfig", "generationConfig.topK"),
        "ollama": ("think", "options.top_k"),
    }
    assert route(CHAT, "anthropic", "thinking").how == "refused"
    # a Chat Completions client's own `top_k` reaches an OpenAI-wire server as sent (vLLM, LM Studio
    # take it); one bridged from /v1/messages is refused — OpenAI's API has no such parameter
    assert route(CHAT, "openai", "top_k").how == "forwarded"
    assert route(CHAT, "lmstudio", "top_k", bridged=True).how == "refused"
    assert route(CHAT, "gemini", "top_k", bridged=True).path == "generationConfig.topK"
    assert passed_fields(CHAT, "openai", {"top_k": 5}) == {"top_k": 5}
    for name in ("top_k", "thinking"):
        with pytest.raises(InvalidRequestError) as caught:
            passed_fields(CHAT, "openai", {name: {"type": "enabled", "budget_tokens": 9}}, bridged=True)
        assert caught.value.field == name and "openai wire has no equivalent" in caught.value.message
    disabled = {"type": "disabled"}
    assert passed_fields(CHAT, "openai", {"thinking": disabled}, bridged=True) == {}  # asks for nothing
    assert passed_fields(CHAT, "gemini", {"thinking": disabled, "top_k": None}) == {}


@pytest.mark.parametrize(
    ("value", "field", "words"),
    [
        ({"type": "interleaved"}, "thinking.type", "maps 'enabled' (with budget_tokens) or 'adaptive'"),
        ({"type": "adaptive", "budget_tokens": 9}, "thinking.budget_tokens", "no equivalent"),
        ({"type": "enabled"}, "thinking.budget_tokens", "an integer of at least 1"),
        ({"type": "enabled", "budget_tokens": "9"}, "thinking.budget_tokens", "'9'"),
        ({"type": "enabled", "budget_tokens": 9, "display": "x"}, "thinking.display", "no equivalent"),
        ("enabled", "thinking", "an object"),
    ],
)
def test_a_thinking_value_a_wire_cannot_map_is_a_400_naming_its_part(
    value: Any, field: str, words: str
) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        thinking_budget("gemini", value, 4096)
    assert caught.value.field == field and words in caught.value.message


def test_the_thinking_budget_is_held_within_max_tokens() -> None:
    assert thinking_budget("gemini", {"type": "enabled", "budget_tokens": 1024}, 4096) == 1024
    # `max_tokens` capped below the budget (`max_tokens_per_call`): the budget follows, so the hold
    # of input estimate + max_tokens covers thinking and answer together
    assert thinking_budget("ollama", {"budget_tokens": 10_000, "type": "enabled"}, 8192) == 8192

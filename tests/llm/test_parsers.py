"""Every quirk fixture of ../shared/fixtures/llm/quirks/ turned into the exact tool call or clean text,
through the parser the quirk rules pick for the model that produced it (seed 002 §4.1, §4.1.1)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarniwoop.llm.adapters.response import ChatResponse, ToolCall
from zarniwoop.llm.parsers import get_parser, parser_names, strip_think_tags
from zarniwoop.llm.parsers.deepseek import repair_arguments
from zarniwoop.llm.sanitize import sanitize

from ..support.paths import fixture_bytes


def quirk(*parts: str) -> str:
    return fixture_bytes("llm", "quirks", *parts).decode("utf-8")


def from_openai_body(body: dict) -> ChatResponse:
    """What an OpenAI-wire chat adapter produces from a recorded body (reasoning from
    `reasoning_content` or `reasoning`, as DeepSeek and Cerebras/Groq name it)."""
    message = body["choices"][0]["message"]
    calls = tuple(
        ToolCall(c.get("id", ""), c["function"]["name"], c["function"]["arguments"])
        for c in message.get("tool_calls") or ()
    )
    return ChatResponse(
        text=message.get("content") or "",
        tool_calls=calls,
        reasoning=message.get("reasoning_content") or message.get("reasoning"),
        finish_reason=body["choices"][0].get("finish_reason"),
        model=body.get("model"),
    )


# --- Gemma 4 --------------------------------------------------------------------------------------


def test_gemma4_bare_call_in_content_becomes_a_tool_call():
    raw = ChatResponse(text=quirk("gemma", "gemma4-bare-call-in-content.txt"), finish_reason="stop")
    clean = sanitize(raw, None, wire_name="google/gemma-4-26b-a4b")
    assert clean == ChatResponse(
        text="",
        tool_calls=(ToolCall("gemma4_call_0", "write_file", '{"content": "hello", "path": "a.txt"}'),),
        finish_reason="stop",
    )


def test_gemma4_native_quote_tokens_become_a_tool_call():
    raw = ChatResponse(text=quirk("gemma", "gemma4-native-escaped-string-format.txt"))
    clean = sanitize(raw, None, wire_name="gemma-4-31b-it")
    assert clean == ChatResponse(text="", tool_calls=(ToolCall("gemma4_call_0", "name", '{"key": "val"}'),))


def test_gemma4_keeps_prose_and_reads_nested_values():
    text = (
        "Sure, saving it now.\n"
        '<|tool_call>call:save{path:<|"|>notes/a, b.txt<|"|>,lines:[1,2.5,true,null],meta:{tag:x}}<tool_call|>'
        "<|tool_call>call:done{}<tool_call|>"
    )
    clean = get_parser("gemma4").parse(ChatResponse(text=text))
    assert clean.text == "Sure, saving it now."
    assert clean.tool_calls == (
        ToolCall(
            "gemma4_call_0",
            "save",
            '{"path": "notes/a, b.txt", "lines": [1, 2.5, true, null], "meta": {"tag": "x"}}',
        ),
        ToolCall("gemma4_call_1", "done", "{}"),
    )


@pytest.mark.parametrize(
    "text",
    [
        "I will call:write_file{content:hello",  # cut off
        'call:x{<|"|>key:val}',  # unterminated quote token
        "Use the call:search feature of the UI.",  # prose, no call
    ],
)
def test_gemma4_leaves_what_it_cannot_parse_alone(text):
    raw = ChatResponse(text=text)
    assert get_parser("gemma4").parse(raw) is raw


# --- DeepSeek -----------------------------------------------------------------------------------


def test_deepseek_v4_dsml_tool_calls_become_tool_calls():
    raw = ChatResponse(text=quirk("deepseek", "v4-dsml-tool-calls.txt"))
    clean = sanitize(raw, None, wire_name="deepseek-v4-pro")
    assert clean == ChatResponse(
        text="",
        tool_calls=(
            ToolCall("deepseek-v4_call_0", "get_weather", '{"city": "Paris", "days": 3}'),
            # The source elided the second invoke's parameters ("..."): a call without arguments.
            ToolCall("deepseek-v4_call_1", "get_weather", "{}"),
        ),
    )


def test_deepseek_v3_special_tokens_in_content_become_a_tool_call():
    raw = ChatResponse(text=quirk("deepseek", "v3-tool-call-tokens-in-content.txt"))
    clean = sanitize(raw, None, wire_name="deepseek/deepseek-v3")
    assert clean == ChatResponse(
        text="", tool_calls=(ToolCall("deepseek-v4_call_0", "analysis_input", '{"work_dir_name":"..."}'),)
    )


def test_deepseek_arguments_with_trailing_garbage_are_repaired():
    error = quirk("deepseek", "v3-args-trailing-garbage.error.txt")
    start = error.index("non-JSON arguments '") + len("non-JSON arguments '")
    arguments = error[start : error.rindex("'")]  # exactly what the model sent, as the error quotes it
    with pytest.raises(json.JSONDecodeError):
        json.loads(arguments)
    raw = ChatResponse(
        tool_calls=(ToolCall("call_0", "get_current_weather", arguments),), finish_reason="tool_calls"
    )
    clean = sanitize(raw, None, wire_name="deepseek-chat")
    assert clean == ChatResponse(
        tool_calls=(ToolCall("call_0", "get_current_weather", '{"location":"Berlin"}'),),
        finish_reason="tool_calls",
    )
    assert clean.tool_calls[0].parsed_arguments() == {"location": "Berlin"}


def test_deepseek_recorded_tool_call_passes_unchanged():
    raw = from_openai_body(
        json.loads(fixture_bytes("llm", "deepseek", "chat-completion-tool-call-reasoner.json"))
    )
    assert raw.tool_calls and raw.reasoning
    assert sanitize(raw, None, wire_name="deepseek-chat") is raw


@pytest.mark.parametrize(
    ("arguments", "repaired"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ('```json\n{"a": 1}\n```', '{"a": 1}'),
        ('{"a": {"b": [1, 2]}} trailing', '{"a": {"b": [1, 2]}}'),
        ("not json at all", "not json at all"),
        ("[1, 2] tail", "[1, 2] tail"),
    ],
)
def test_repair_arguments_keeps_the_first_json_object_verbatim(arguments, repaired):
    assert repair_arguments(arguments) == repaired


# --- gpt-oss Harmony -----------------------------------------------------------------------------


def test_harmony_raw_channel_markup_splits_reasoning_and_answer():
    raw = ChatResponse(text=quirk("harmony", "gpt-oss-raw-channel-markup.txt"))
    clean = sanitize(raw, None, wire_name="gpt-oss-120b")
    assert clean == ChatResponse(text="…answer…", reasoning="…reasoning…")


def test_harmony_rendered_conversation_keeps_only_the_assistants_answer():
    raw = ChatResponse(text=quirk("harmony", "gpt-oss-rendered-conversation.txt"))
    clean = sanitize(raw, None, wire_name="openai/gpt-oss-20b")
    assert clean == ChatResponse(
        text="The answer is 4.", reasoning="The user wants me to calculate 2+2. Let me compute: 2+2 = 4."
    )


def test_harmony_markers_stripped_by_sglang_still_split():
    raw = ChatResponse(text=quirk("harmony", "gpt-oss-markers-stripped-sglang.txt"))
    clean = sanitize(raw, None, wire_name="gpt-oss-120b")
    assert clean == ChatResponse(text="Hello! How can I help?", reasoning="User asks 'hi'...")


def test_harmony_reasoning_field_from_cerebras_passes_unchanged():
    raw = from_openai_body(json.loads(quirk("harmony", "gpt-oss-cerebras-reasoning-field.json")))
    clean = sanitize(raw, None, wire_name="gpt-oss-120b")
    assert clean is raw
    assert (clean.text, clean.reasoning) == (
        "The capital of France is **Paris**.",
        "User asks simple question: capital of France. Answer: Paris. Provide concise answer.",
    )


def test_harmony_commentary_to_a_function_becomes_a_tool_call():
    text = (
        "<|channel|>analysis<|message|>Need weather.<|end|>"
        '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>'
    )
    clean = get_parser("harmony").parse(ChatResponse(text=text))
    assert clean == ChatResponse(
        text="",
        reasoning="Need weather.",
        tool_calls=(ToolCall("harmony_call_0", "get_weather", '{"city":"Paris"}'),),
    )


# --- Think tags ---------------------------------------------------------------------------------


def test_empty_think_block_from_ollama_is_stripped():
    raw = ChatResponse(text=quirk("think", "deepseek-r1-empty-think-ollama-cli.txt"))
    clean = sanitize(raw, None, wire_name="deepseek-r1:671b")
    assert clean == ChatResponse(
        text="Hello! I'm an AI assistant developed by DeepSeek. For comprehensive details about our models and "
        "products, we invite you to \nconsult our official documentation.",
        reasoning=None,
    )


def test_groq_think_in_content_moves_to_reasoning():
    body = json.loads(quirk("think", "groq-deepseek-r1-distill-think-in-content.json"))
    raw = from_openai_body(body)
    clean = sanitize(raw, None, wire_name=body["model"])
    content = body["choices"][0]["message"]["content"]
    think, answer = content.removeprefix("<think>\n").split("\n</think>\n\n", 1)
    assert clean.text == answer
    assert clean.text.startswith("To make Uruguayan alfajores, follow these organized steps")
    assert clean.text.endswith("Enjoy your traditional Uruguayan alfajores with a cup of coffee or tea!")
    assert clean.reasoning == think
    assert clean.reasoning.startswith("Okay, so I want to make Uruguayan alfajores.")
    assert "<think>" not in clean.text and "</think>" not in clean.text
    assert (clean.finish_reason, clean.model) == ("stop", "deepseek-r1-distill-llama-70b")


def test_llamacpp_stream_closes_think_without_an_opening_tag():
    events = [
        line.removeprefix("data: ")
        for line in quirk("think", "deepseek-r1-llamacpp-stream-close-think.sse").splitlines()
        if line
    ]
    deltas = [json.loads(e)["choices"][0]["delta"]["content"] for e in events]
    assert deltas == [" fast", "."]
    # The recorded part alone carries no markup yet: nothing to strip.
    partial = ChatResponse(text="".join(deltas))
    assert sanitize(partial, None, wire_name="deepseek-r1") is partial
    # With the third delta the source documents ("\n</think>") and an answer after it:
    done = ChatResponse(text="".join(deltas) + "\n</think>" + "\n\nParis.")
    assert sanitize(done, None, wire_name="deepseek-r1") == ChatResponse(text="Paris.", reasoning="fast.")


@pytest.mark.parametrize(
    ("text", "answer", "reasoning"),
    [
        ("<think>a</think>b", "b", "a"),
        ("  <think>\nplan\n</think>\n\nanswer\n", "answer", "plan"),
        ("<think>one</think>mid<think>two</think>end", "midend", "one\n\ntwo"),
        ("<think>cut off while thinking", "", "cut off while thinking"),
        ("reasoning first</think>answer", "answer", "reasoning first"),
    ],
)
def test_think_tag_shapes(text, answer, reasoning):
    calls = (ToolCall("c1", "f", "{}"),)
    clean = strip_think_tags(ChatResponse(text=text, tool_calls=calls))
    assert (clean.text, clean.reasoning, clean.tool_calls) == (answer, reasoning, calls)


def test_think_stripping_keeps_reasoning_the_wire_already_gave():
    clean = strip_think_tags(ChatResponse(text="<think>inline</think>done", reasoning="from the wire"))
    assert (clean.text, clean.reasoning) == ("done", "from the wire\n\ninline")


# --- Defensive and total ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(parser_names()))
def test_a_clean_response_comes_back_as_the_same_object(name):
    clean = ChatResponse(text="Paris is the capital of France.", tool_calls=(ToolCall("c", "f", '{"a": 1}'),))
    assert get_parser(name).parse(clean) is clean
    plain = ChatResponse(text="Just an answer.")
    assert get_parser(name).parse(plain) is plain


def test_structured_tool_calls_are_never_duplicated_from_text():
    raw = ChatResponse(
        text="call:write_file{content:hello,path:a.txt}", tool_calls=(ToolCall("c", "write_file", "{}"),)
    )
    assert get_parser("gemma4").parse(raw) is raw


FRAGMENTS = [
    "call:",
    "f",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    '<|"|>',
    '"',
    "x",
    "1",
    "<|tool_call>",
    "<tool_call|>",
    "<｜DSML｜tool_calls>",
    "</｜DSML｜tool_calls>",
    '<｜DSML｜invoke name="a">',
    "</｜DSML｜invoke>",
    "<|channel|>",
    "analysis",
    "final",
    "<|message|>",
    "<|end|>",
    "<think>",
    "</think>",
    "assistantfinal",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    "```",
    "\n",
]


@given(st.one_of(st.text(), st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join)))
def test_parsers_and_stripping_never_raise(text):
    raw = ChatResponse(text=text)
    for name in parser_names():
        out = get_parser(name).parse(raw)
        assert isinstance(out, ChatResponse)
        for call in out.tool_calls:
            json.loads(call.arguments)  # synthesized calls always carry JSON
    assert isinstance(strip_think_tags(raw), ChatResponse)

"""Images across API shapes: the Messages API's `image` blocks (the real anthropic SDK) and the
Responses API's `input_image` parts (the real openai SDK's `responses.create`), through the gateway to
a model served over another wire on the loopback emulator. The upstream body holds the image in its
wire's own form, in order with the text, streamed too; what the wire cannot carry (a URL on Ollama, a
`detail` off the OpenAI wire, a `file_id`, a PDF on Ollama or by URL on OpenAI's chat, a document's
citations, a malformed source) is a 400 naming the
client's own field, with nothing sent; an Anthropic-wire model is still sent the block as written;
the usage the upstream reports is what is charged. Images a tool returned (a screenshot read) reach
every wire too: inside Anthropic's `tool_result`, right after the results elsewhere."""

from __future__ import annotations

from typing import Any

import pytest

from zarniwoop.llm.adapters.base import ChatMessage
from zarniwoop.llm.adapters.images import IMAGE_TOKENS, ImagePart
from zarniwoop.llm.adapters.results import results_with_images_after
from zarniwoop.surfaces.http.anthropic_wire import MessagesRequest, to_chat_request

from ..support.emulator import Reply
from ..support.gateway import LiveGateway, openai_text_stream
from ..support.images import (
    GATEWAYS,
    PATHS,
    PHOTO,
    PNG,
    PROMPT_TOKENS,
    WIRE_MODELS,
    gw_fixture,
    image_gateway,
    sent,
)

pytestmark = pytest.mark.xdist_group(__name__)

anthropic = pytest.importorskip("anthropic", reason="these tests drive the real anthropic SDK")
openai = pytest.importorskip("openai", reason="these tests drive the real openai SDK")

gateway = pytest.fixture(scope="module", params=GATEWAYS, name="gateway")(image_gateway)

gw = gw_fixture


# -- each wire's form, from either shape ------------------------------------------------------------

PNG_URL = f"data:image/png;base64,{PNG}"
GIF = "R0lGODdh"
SECOND = {"ollama": f"data:image/gif;base64,{GIF}"}
"""The second image each test sends, by wire: the photo's URL, but data where the wire takes no URL."""
TEXT = ({"type": "text", "text": "What is in "}, {"type": "text", "text": "?"})
EXPECTED = {
    "openai": [
        TEXT[0],
        {"type": "image_url", "image_url": {"url": PNG_URL}},
        {"type": "image_url", "image_url": {"url": PHOTO}},
        TEXT[1],
    ],
    "anthropic": [
        TEXT[0],
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": PHOTO}},
        TEXT[1],
    ],
    "gemini": [
        {"text": "What is in "},
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
        {"fileData": {"mimeType": "image/jpeg", "fileUri": PHOTO}},
        {"text": "?"},
    ],
    "ollama": {"role": "user", "content": "What is in ?", "images": [PNG, GIF]},
}
"""The user turn each wire's upstream must be sent for the text, the PNG and the second image."""
USER_TURN = {
    "openai": lambda body: body["messages"][1]["content"],
    "anthropic": lambda body: body["messages"][0]["content"],
    "gemini": lambda body: body["contents"][0]["parts"],
    "ollama": lambda body: body["messages"][1],
}


def _block(url: str) -> dict[str, Any]:
    """A Messages API image block of a data URL or an http(s) URL."""
    if not url.startswith("data:"):
        return {"type": "image", "source": {"type": "url", "url": url}}
    media_type, _, data = url.removeprefix("data:").partition(";base64,")
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _part(url: str) -> dict[str, Any]:
    """A Chat Completions image part of `url`, as the OpenAI wire is sent it."""
    return {"type": "image_url", "image_url": {"url": url}}


def _image(url: str, detail: str = "auto") -> dict[str, Any]:
    """A Responses API `input_image` part."""
    return {"type": "input_image", "image_url": url, "detail": detail}


def _file(**fields: str) -> dict[str, Any]:
    """A Responses API `input_file` part."""
    return {"type": "input_file", **fields}


def _blocks(*images: dict[str, Any]) -> list[dict[str, Any]]:
    """A Messages API user turn: text, the image blocks, text."""
    return [{"role": "user", "content": [TEXT[0], *images, TEXT[1]]}]


def _input(*images: dict[str, Any]) -> list[dict[str, Any]]:
    """A Responses API user message: text, the `input_image` parts, text."""
    content = [{"type": "input_text", "text": "What is in "}, *images, {"type": "input_text", "text": "?"}]
    return [{"role": "user", "content": content}]


def _anthropic(gw: LiveGateway) -> Any:
    http = gw.http if gw.server is None else None
    return anthropic.Anthropic(base_url=gw.url, http_client=http, max_retries=0, api_key=gw.setup.token)


def _message(gw: LiveGateway, wire: str, *images: dict[str, Any]) -> Any:
    return _anthropic(gw).messages.create(
        model=WIRE_MODELS[wire], max_tokens=64, system="Be brief.", messages=_blocks(*images)
    )


def _respond(gw: LiveGateway, wire: str, *images: dict[str, Any]) -> Any:
    return gw.openai().responses.create(
        model=WIRE_MODELS[wire], instructions="Be brief.", input=_input(*images), store=False
    )


@pytest.mark.parametrize(
    ("shape", "wire"),
    [
        ("messages", "openai"),
        ("messages", "gemini"),
        ("messages", "ollama"),
        ("responses", "anthropic"),
        ("responses", "gemini"),
        ("responses", "ollama"),
    ],
)
def test_a_bridged_image_reaches_the_wire_in_its_form_and_the_reported_usage_is_charged(
    gw: LiveGateway, shape: str, wire: str
) -> None:
    images = (PNG_URL, SECOND.get(wire, PHOTO))
    if shape == "messages":
        answer = _message(gw, wire, *map(_block, images))
        text = answer.content[0].text
    else:
        answer = _respond(gw, wire, *map(_image, images))
        text = answer.output_text
    [body] = sent(gw, wire)
    assert USER_TURN[wire](body) == EXPECTED[wire]
    assert text == "A cat."
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (PROMPT_TOKENS, 3)
    row = gw.usage_row(answer.model_extra["zarniwoop"]["usage_id"])
    assert row[2:7] == (*WIRE_MODELS[wire].split(":"), "default", PROMPT_TOKENS, 3)


# -- the Messages API (`/v1/messages`, the anthropic SDK) ------------------------------------------

PDF_BLOCK = {
    "type": "document",
    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"},
}
PAPER = "https://papers.example.org/attention.pdf"

BASE64 = _block(PNG_URL)
BY_URL = _block(PHOTO)


def test_a_streamed_message_carries_its_image_to_the_openai_wire(gw: LiveGateway) -> None:
    stream = Reply(
        body=openai_text_stream("A small cat.", (PROMPT_TOKENS, 4)),
        headers={"Content-Type": "text/event-stream"},
    )
    gw.emulator.add(PATHS["openai"], stream)
    with _anthropic(gw).messages.stream(
        model=WIRE_MODELS["openai"], max_tokens=64, messages=_blocks(BY_URL)
    ) as streamed:
        events = list(streamed)
        final = streamed.get_final_message()
    text = "".join(e.delta.text for e in events if e.type == "content_block_delta")
    [served] = [e.model_extra["zarniwoop"] for e in events if e.type == "message_delta"]
    [body] = sent(gw, "openai")
    assert body["stream"] is True
    assert body["messages"][0]["content"][1] == {"type": "image_url", "image_url": {"url": PHOTO}}
    assert text == "A small cat."
    assert (final.usage.input_tokens, final.usage.output_tokens) == (PROMPT_TOKENS, 4)
    assert gw.usage_row(served["usage_id"])[5:7] == (PROMPT_TOKENS, 4)


def test_an_anthropic_wire_model_is_still_sent_the_blocks_as_written(gw: LiveGateway) -> None:
    # a source no bridge would take goes natively as the client wrote it: Anthropic judges it
    heic = {"type": "image", "source": {"type": "base64", "media_type": "image/heic", "data": "AAAA"}}
    _message(gw, "anthropic", heic, BY_URL)
    [body] = sent(gw, "anthropic")
    assert body["messages"] == _blocks(heic, BY_URL)


AT = "messages[0].content[1]"
"""The block each refusal names: `_blocks` puts it second in the user turn."""


def _source(kind: str, source: Any) -> dict[str, Any]:
    """An `image` or `document` block of `source`."""
    return {"type": kind, "source": source}


def _url(url: str) -> dict[str, str]:
    return {"type": "url", "url": url}


def _data(media_type: str, data: str) -> dict[str, str]:
    return {"type": "base64", "media_type": media_type, "data": data}


@pytest.mark.parametrize(
    ("wire", "block", "field"),
    [
        ("ollama", BY_URL, f"{AT}.source"),
        ("gemini", _source("image", _url("https://images.example.org/cat")), f"{AT}.source"),
        ("openai", _source("image", _data("image/heic", "AAAA")), f"{AT}.source.media_type"),
        ("openai", _source("image", _data("image/png", "not base64!")), f"{AT}.source.data"),
        ("gemini", _source("image", _url("ftp://images.example.org/cat.png")), f"{AT}.source.url"),
        ("openai", _source("image", {"type": "file", "file_id": "file_011"}), f"{AT}.source.type"),
        ("openai", _source("image", "https://images.example.org/cat.png"), f"{AT}.source"),
        # PDF documents (`test_gateway_bridged_documents.py` has what the wires carry of them)
        ("ollama", PDF_BLOCK, f"{AT}.source"),
        ("openai", _source("document", _url(PAPER)), f"{AT}.source"),
        ("gemini", {**PDF_BLOCK, "citations": {"enabled": True}}, f"{AT}.citations"),
        ("openai", _source("document", {"type": "file", "file_id": "file_011"}), f"{AT}.source.type"),
        ("gemini", _source("document", _data("text/csv", "YSxi")), f"{AT}.source.media_type"),
    ],
)
def test_what_a_bridged_wire_cannot_carry_of_an_image_or_document_block_is_a_400_naming_it(
    gw: LiveGateway, wire: str, block: dict[str, Any], field: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        _message(gw, wire, block)
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    assert caught.value.body["error"]["message"].startswith(field + ":")
    assert sent(gw, wire) == []


def test_the_messages_estimate_holds_image_tokens_for_each_image_block() -> None:
    def estimate(messages: list[dict[str, Any]]) -> int:
        body = {"model": WIRE_MODELS["openai"], "max_tokens": 64, "messages": messages}
        return to_chat_request(MessagesRequest.model_validate(body), body).estimated_input_tokens()

    text_only = estimate(_blocks())
    assert estimate(_blocks(BY_URL)) == text_only + IMAGE_TOKENS == text_only + 1600
    big = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A" * 40_000}}
    assert estimate(_blocks(big, BASE64)) == text_only + 2 * 1600  # the data is not counted as text
    # a tool result's images (a screenshot read) too
    assert estimate(_conversation(SHOT, SHOT)) == estimate(_conversation()) + 2 * IMAGE_TOKENS


# -- the Responses API (`/v1/responses`, the openai SDK) ---------------------------------------------


def test_responses_detail_goes_as_sent_to_the_openai_chat_wire(gw: LiveGateway) -> None:
    # the emulated OpenAI instance is not OpenAI's own endpoint: /responses is bridged to its chat wire
    response = _respond(gw, "openai", _image(PHOTO, "high"), _image(PNG_URL, "low"))
    [body] = sent(gw, "openai")
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "What is in "},
        {"type": "image_url", "image_url": {"url": PHOTO, "detail": "high"}},
        {"type": "image_url", "image_url": {"url": PNG_URL, "detail": "low"}},
        {"type": "text", "text": "?"},
    ]
    assert response.usage.input_tokens == PROMPT_TOKENS


@pytest.mark.parametrize(
    ("wire", "part", "param"),
    [
        ("anthropic", _image(PHOTO, "high"), "input[0].content[1].detail"),
        ("gemini", _image(PNG_URL, "low"), "input[0].content[1].detail"),
        ("ollama", _image(PHOTO), "input[0].content[1].image_url"),
        ("gemini", _image("http://images.example.org/cat.png"), "input[0].content[1].image_url"),
        (
            "anthropic",
            {"type": "input_image", "file_id": "file-1", "detail": "auto"},
            "input[0].content[1].file_id",
        ),
        ("anthropic", _image("data:image/svg+xml;base64,PHN2Zz4="), "input[0].content[1].image_url"),
        ("openai", _image("file:///etc/passwd"), "input[0].content[1].image_url"),
        ("gemini", {"type": "input_file", "file_id": "file-1"}, "input[0].content[1].file_id"),
        # PDFs as `input_file` (`test_gateway_bridged_documents.py` has what the wires carry of them)
        ("gemini", _file(file_data="data:text/csv;base64,YSxi"), "input[0].content[1].file_data"),
        (
            "gemini",
            _file(file_data="data:application/pdf;base64,not base64!"),
            "input[0].content[1].file_data",
        ),
        ("gemini", _file(file_url="ftp://papers.example.org/a.pdf"), "input[0].content[1].file_url"),
        ("ollama", _file(file_data="data:application/pdf;base64,JVBE"), "input[0].content[1].file_data"),
        ("openai", _file(file_url=PAPER), "input[0].content[1].file_url"),
    ],
)
def test_what_a_bridged_wire_cannot_carry_of_an_input_image_or_file_is_a_400_naming_it(
    gw: LiveGateway, wire: str, part: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        _respond(gw, wire, part)
    assert refused.value.body["param"] == param
    assert refused.value.body["type"] == "invalid_request_error"
    assert sent(gw, wire) == []


# -- images a tool returned ---------------------------------------------------------------------
# Claude Code's `Read` of a screenshot: a `tool_result` whose content holds an `image` block; a
# Responses API `function_call_output` with an `input_image`. Anthropic's `tool_result` takes them;
# OpenAI's chat, Gemini and Ollama, whose tool results are text, get the results' text and then one
# user message with each result's images, led by a line naming the tool and the call.

SHOT = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
READ = {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "/tmp/shot.png"}}
LABEL = "What the Read call toolu_01 returned:"


def _conversation(*result: dict[str, Any], after: str | None = None) -> list[dict[str, Any]]:
    """The turns of a Claude Code session that read a screenshot: the ask, the call, its result
    (content blocks `result`), and the user's next words if any."""
    closing = [{"type": "text", "text": after}] if after else []
    return [
        {"role": "user", "content": "What does the screenshot show?"},
        {"role": "assistant", "content": [READ]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": list(result)},
                *closing,
            ],
        },
    ]


def _turns(gw: LiveGateway, wire: str, messages: list[dict[str, Any]]) -> Any:
    return _anthropic(gw).messages.create(model=WIRE_MODELS[wire], max_tokens=64, messages=messages)


def test_a_read_screenshot_reaches_the_openai_wire_after_the_tool_result(gw: LiveGateway) -> None:
    answer = _turns(gw, "openai", _conversation({"type": "text", "text": "Read image (1x1)"}, SHOT))
    [body] = sent(gw, "openai")
    assert body["messages"][2:] == [
        {"role": "tool", "content": "Read image (1x1)", "tool_call_id": "toolu_01"},
        {"role": "user", "content": [{"type": "text", "text": LABEL}, _part(PNG_URL)]},
    ]
    assert answer.content[0].text == "A cat."
    row = gw.usage_row(answer.model_extra["zarniwoop"]["usage_id"])
    assert row[5:7] == (PROMPT_TOKENS, 3)  # the upstream's count is charged, not the estimate


def test_the_users_next_words_follow_the_results_images_in_the_same_user_turn(gw: LiveGateway) -> None:
    _turns(gw, "openai", _conversation(SHOT, after="Is the button blue?"))
    [body] = sent(gw, "openai")
    tool, user = body["messages"][2:]
    assert tool == {"role": "tool", "content": "(attached: in the next message)", "tool_call_id": "toolu_01"}
    assert user["content"] == [
        {"type": "text", "text": LABEL},
        _part(PNG_URL),
        {"type": "text", "text": "Is the button blue?"},
    ]


def test_gemini_gets_the_function_response_then_the_image_inline(gw: LiveGateway) -> None:
    _turns(gw, "gemini", _conversation({"type": "text", "text": "Read image"}, SHOT))
    [body] = sent(gw, "gemini")
    result, shown = body["contents"][2:]
    assert result["role"] == "user" and result["parts"][0]["functionResponse"]["name"] == "Read"
    assert shown == {
        "role": "user",
        "parts": [{"text": LABEL}, {"inlineData": {"mimeType": "image/png", "data": PNG}}],
    }


def test_ollama_gets_the_image_bytes_on_the_message_after_the_result(gw: LiveGateway) -> None:
    _turns(gw, "ollama", _conversation({"type": "text", "text": "Read image"}, SHOT))
    [body] = sent(gw, "ollama")
    assert body["messages"][2:] == [
        {"role": "tool", "content": "Read image", "tool_name": "Read"},
        {"role": "user", "content": LABEL, "images": [PNG]},
    ]


def test_an_anthropic_wire_model_is_sent_the_read_screenshot_as_written(gw: LiveGateway) -> None:
    messages = _conversation({"type": "text", "text": "Read image"}, SHOT)
    _turns(gw, "anthropic", messages)
    [body] = sent(gw, "anthropic")
    assert body["messages"] == messages


def test_what_a_wire_cannot_carry_inside_a_result_is_a_400_naming_it(gw: LiveGateway) -> None:
    found = {"type": "search_result", "source": "https://example.org", "title": "A", "content": []}
    inside = "messages[2].content[0].content[0]"
    for wire, block, field in (("ollama", BY_URL, f"{inside}.source"), ("openai", found, f"{inside}.type")):
        with pytest.raises(anthropic.BadRequestError) as refused:
            _turns(gw, wire, _conversation(block))
        assert refused.value.body["error"]["message"].startswith(field + ":")
        assert sent(gw, wire) == []


def _read_output(gw: LiveGateway, wire: str) -> Any:
    """A Responses API conversation whose `read` call answered text and a screenshot."""
    output = [{"type": "input_text", "text": "Read image"}, {"type": "input_image", "image_url": PNG_URL}]
    items = [
        {"role": "user", "content": "What does the screenshot show?"},
        {"type": "function_call", "call_id": "call_7", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_7", "output": output},
    ]
    return gw.openai().responses.create(model=WIRE_MODELS[wire], input=items, store=False)


def test_a_function_call_outputs_image_goes_inside_an_anthropic_tool_result(gw: LiveGateway) -> None:
    response = _read_output(gw, "anthropic")
    [body] = sent(gw, "anthropic")
    [result] = body["messages"][2]["content"]
    assert result == {
        "type": "tool_result",
        "tool_use_id": "call_7",
        "content": [{"type": "text", "text": "Read image"}, SHOT],
    }
    assert response.output_text == "A cat."


def test_a_function_call_outputs_image_follows_the_result_on_the_ollama_wire(gw: LiveGateway) -> None:
    _read_output(gw, "ollama")
    [body] = sent(gw, "ollama")
    assert body["messages"][2:] == [
        {"role": "tool", "content": "Read image", "tool_name": "read"},
        {"role": "user", "content": "What the read call call_7 returned:", "images": [PNG]},
    ]


def test_parallel_results_images_follow_the_run_each_led_by_its_call() -> None:
    one, two = ImagePart.base64("image/png", PNG, "a"), ImagePart.http(PHOTO, "b", "b.url")
    messages = [
        ChatMessage("assistant", ""),
        ChatMessage.of_parts("tool", ["first", one], tool_call_id="c1", name="shot"),
        ChatMessage("tool", "no image", tool_call_id="c2", name="ls"),
        ChatMessage.of_parts("tool", [two], tool_call_id="c3", name="shot"),
        ChatMessage("assistant", "seen"),
    ]
    out = results_with_images_after(messages)
    assert [(m.role, m.content) for m in out] == [
        ("assistant", ""),
        ("tool", "first"),
        ("tool", "no image"),
        ("tool", "(attached: in the next message)"),
        ("user", "What the shot call c1 returned:\nWhat the shot call c3 returned:"),
        ("assistant", "seen"),
    ]
    assert out[4].images == (one, two)
    assert out[1].parts == () and out[3].parts == ()
    text_only = [messages[0], messages[2]]
    assert results_with_images_after(text_only) is text_only  # nothing to move: the list itself

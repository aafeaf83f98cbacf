"""Images on `POST /v1/chat/completions` (the openai SDK's `image_url` parts), through the real SDK and
the in-process gateway to each upstream wire on the loopback emulator: the upstream body holds the
image in the wire's own form, in order with the text (OpenAI content parts, Anthropic `image` blocks,
Gemini `inlineData`, Ollama `images`), streamed too; what a wire cannot carry (an http(s) URL on
Gemini and Ollama, `detail` off the OpenAI wire), a malformed image URL and every other part type
are a 400 naming the field, with nothing sent; the usage the upstream reports is what is charged,
and the hold counts `IMAGE_TOKENS` an image. A request as agents send them — a screenshot, a
fetched page, several MiB — passes the request guard (32 MiB on the gateway's paths, 1 MiB
elsewhere: `surfaces/http/guard.py`) and reaches the upstream byte for byte; the over-cap 413s in
each API's shape are in `test_http_guard.py`, on a real server's socket."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from zarniwoop.llm.adapters.images import IMAGE_TOKENS
from zarniwoop.llm.trace import request_json
from zarniwoop.surfaces.http.openai_wire import ChatCompletionRequest

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

openai = pytest.importorskip("openai", reason="these tests drive the real openai SDK (pip install openai)")


def _image(url: str, detail: str | None = None) -> dict[str, Any]:
    image: dict[str, Any] = {"url": url} | ({"detail": detail} if detail else {})
    return {"type": "image_url", "image_url": image}


def _asking(*images: dict[str, Any]) -> list[dict[str, Any]]:
    """A system message, then a user turn: text, the images, text."""
    content = [{"type": "text", "text": "What is in "}, *images, {"type": "text", "text": "?"}]
    return [{"role": "system", "content": "Be brief."}, {"role": "user", "content": content}]


gateway = pytest.fixture(scope="module", params=GATEWAYS, name="gateway")(image_gateway)

gw = gw_fixture


def _ask(gw: LiveGateway, wire: str, messages: list[dict[str, Any]], **options: Any) -> Any:
    return gw.openai().chat.completions.create(model=WIRE_MODELS[wire], messages=messages, **options)


# -- each wire's form -----------------------------------------------------------------------------


def test_openai_wire_gets_the_parts_as_sent_and_the_reported_usage_is_charged(gw: LiveGateway) -> None:
    completion = _ask(gw, "openai", _asking(_image(f"data:image/png;base64,{PNG}", "low"), _image(PHOTO)))
    [body] = sent(gw, "openai")
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in "},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"}},
                {"type": "image_url", "image_url": {"url": PHOTO}},
                {"type": "text", "text": "?"},
            ],
        },
    ]
    assert completion.choices[0].message.content == "A cat."
    assert completion.usage.prompt_tokens == PROMPT_TOKENS
    row = gw.usage_row(completion.model_extra["zarniwoop"]["usage_id"])
    assert row[2:7] == ("openai", "gpt-4o-mini", "default", PROMPT_TOKENS, 3)


def test_anthropic_wire_gets_image_blocks_base64_and_url(gw: LiveGateway) -> None:
    completion = _ask(
        gw, "anthropic", _asking(_image(f"data:image/webp;base64,{PNG}"), _image(PHOTO, "auto"))
    )
    [body] = sent(gw, "anthropic")
    assert body["system"] == "Be brief."
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in "},
                {"type": "image", "source": {"type": "base64", "media_type": "image/webp", "data": PNG}},
                {"type": "image", "source": {"type": "url", "url": PHOTO}},
                {"type": "text", "text": "?"},
            ],
        }
    ]
    row = gw.usage_row(completion.model_extra["zarniwoop"]["usage_id"])
    assert row[2:7] == ("anthropic", "claude-sonnet-4-5", "default", PROMPT_TOKENS, 3)


def test_gemini_wire_gets_inline_data_and_file_data_in_order(gw: LiveGateway) -> None:
    completion = _ask(gw, "gemini", _asking(_image(f"data:image/jpeg;base64,{PNG}"), _image(PHOTO)))
    [body] = sent(gw, "gemini")
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "What is in "},
                {"inlineData": {"mimeType": "image/jpeg", "data": PNG}},
                {"fileData": {"mimeType": "image/jpeg", "fileUri": PHOTO}},
                {"text": "?"},
            ],
        }
    ]
    assert completion.usage.prompt_tokens == PROMPT_TOKENS


def test_ollama_wire_gets_the_images_list(gw: LiveGateway) -> None:
    completion = _ask(
        gw, "ollama", _asking(_image(f"data:image/png;base64,{PNG}"), _image("data:image/gif;base64,R0lG"))
    )
    [body] = sent(gw, "ollama")
    assert body["messages"][1] == {"role": "user", "content": "What is in ?", "images": [PNG, "R0lG"]}
    row = gw.usage_row(completion.model_extra["zarniwoop"]["usage_id"])
    assert row[5:7] == (PROMPT_TOKENS, 3)


def test_a_streamed_call_carries_the_image_too(gw: LiveGateway) -> None:
    stream = Reply(
        body=openai_text_stream("A small cat.", (PROMPT_TOKENS, 4)),
        headers={"Content-Type": "text/event-stream"},
    )
    gw.emulator.add(PATHS["openai"], stream)
    chunks = list(
        _ask(
            gw, "openai", _asking(_image(PHOTO, "high")), stream=True, stream_options={"include_usage": True}
        )
    )
    [body] = sent(gw, "openai")
    assert body["stream"] is True
    assert body["messages"][1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": PHOTO, "detail": "high"},
    }
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "A small cat."
    assert chunks[-1].usage.prompt_tokens == PROMPT_TOKENS


def test_an_image_of_600_kib_passes_the_gateway(gw: LiveGateway) -> None:
    data = "A" * (600 * 1024)
    _ask(gw, "anthropic", _asking(_image(f"data:image/png;base64,{data}")))
    [body] = sent(gw, "anthropic")
    assert body["messages"][0]["content"][1]["source"]["data"] == data


# -- refusals: a 400 naming the field, nothing sent ------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "part", "param"),
    [
        ("gemini", _image("https://images.example.org/cat"), "messages[1].content[1].image_url"),
        ("gemini", _image("http://images.example.org/cat.png"), "messages[1].content[1].image_url"),
        ("ollama", _image(PHOTO), "messages[1].content[1].image_url"),
        ("anthropic", _image(PHOTO, "high"), "messages[1].content[1].image_url.detail"),
        ("gemini", _image(f"data:image/png;base64,{PNG}", "low"), "messages[1].content[1].image_url.detail"),
        ("openai", _image("data:image/svg+xml;base64,PHN2Zz4="), "messages[1].content[1].image_url.url"),
        ("openai", _image(f"data:image/png,{PNG}"), "messages[1].content[1].image_url.url"),
        ("anthropic", _image("ftp://images.example.org/cat.jpg"), "messages[1].content[1].image_url.url"),
        ("openai", _image("file:///etc/passwd"), "messages[1].content[1].image_url.url"),
        (
            "ollama",
            _image(f"data:image/png;base64,{PNG}", "original"),
            "messages[1].content[1].image_url.detail",
        ),
        (
            "openai",
            {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
            "messages[1].content[1].type",
        ),
        ("anthropic", {"type": "file", "file": {"file_id": "file-1"}}, "messages[1].content[1].type"),
    ],
)
def test_what_cannot_be_carried_is_a_400_naming_it(
    gw: LiveGateway, wire: str, part: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        _ask(gw, wire, _asking(part))
    assert refused.value.body["param"] == param
    assert refused.value.body["type"] == "invalid_request_error" and param in refused.value.body["message"]
    assert sent(gw, wire) == []


def test_an_image_is_taken_on_user_messages_only(gw: LiveGateway) -> None:
    messages = [{"role": "system", "content": [{"type": "text", "text": "Be brief."}, _image(PHOTO)]}]
    with pytest.raises(openai.BadRequestError) as refused:
        _ask(gw, "openai", [*messages, {"role": "user", "content": "hi"}])
    assert refused.value.body["param"] == "messages[0].content[1].type"
    assert sent(gw, "openai") == []


# -- the hold -------------------------------------------------------------------------------------


def test_the_estimate_holds_image_tokens_for_each_image() -> None:
    def estimate(*images: dict[str, Any]) -> int:
        body = {"model": WIRE_MODELS["openai"], "messages": _asking(*images)}
        return ChatCompletionRequest.model_validate(body).to_chat_request().estimated_input_tokens()

    text_only = estimate()
    assert estimate(_image(PHOTO)) == text_only + IMAGE_TOKENS == text_only + 1600
    # the base64 data is not counted as text: two images are two fixed estimates, whatever their size
    assert estimate(_image(f"data:image/png;base64,{'A' * 40_000}"), _image(PHOTO)) == text_only + 2 * 1600


def test_a_persisted_trace_names_each_image_never_its_data() -> None:
    body = {
        "model": WIRE_MODELS["openai"],
        "messages": _asking(_image(f"data:image/png;base64,{PNG}"), _image(PHOTO)),
    }
    traced = request_json(ChatCompletionRequest.model_validate(body).to_chat_request())
    assert traced["messages"][1] == {
        "role": "user",
        "content": "What is in ?",
        "images": ["image/png", PHOTO],
    }
    assert PNG not in str(traced)


# -- the gateway's body cap (32 MiB) --------------------------------------------------------------

SCREENSHOT = base64.b64encode(bytes(range(256)) * (12 * 1024)).decode()
"""3 MiB of PNG-sized base64 (3,145,728 bytes encoded to 4 MiB): four times the guard's general cap."""


def test_a_chat_with_a_4_mib_screenshot_reaches_the_upstream_whole(gw: LiveGateway) -> None:
    url = f"data:image/png;base64,{SCREENSHOT}"
    completion = _ask(gw, "openai", _asking(_image(url)))
    assert completion.choices[0].message.content == "A cat."
    [upstream] = gw.emulator.requests(PATHS["openai"])
    assert len(upstream.body) > 4 * 1024 * 1024
    assert upstream.json()["messages"][1]["content"][1]["image_url"]["url"] == url


def test_a_chat_with_a_1_5_mib_tool_result_reaches_the_upstream_whole(gw: LiveGateway) -> None:
    page = "<div class='login'>" * (80 * 1024)  # a fetched page an agent hands back: 1.5 MB
    call = {"id": "call_1", "type": "function", "function": {"name": "fetch", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "What is on this page?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": page},
    ]
    assert _ask(gw, "openai", messages).choices[0].message.content == "A cat."
    [upstream] = gw.emulator.requests(PATHS["openai"])
    assert len(upstream.body) > 1024 * 1024  # over the general cap
    assert upstream.json()["messages"][2]["content"] == page


def test_a_message_with_a_4_mib_image_reaches_an_anthropic_upstream_whole(gw: LiveGateway) -> None:
    pytest.importorskip("anthropic", reason="this test drives the real anthropic SDK")
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": SCREENSHOT}}
    message = gw.anthropic().messages.create(
        model=WIRE_MODELS["anthropic"],
        max_tokens=64,
        messages=[{"role": "user", "content": [image, {"type": "text", "text": "What is on this screen?"}]}],
    )
    assert message.content[0].text == "A cat."
    [upstream] = sent(gw, "anthropic")
    assert upstream["messages"][0]["content"][0]["source"]["data"] == SCREENSHOT


def test_a_search_still_stops_at_1_mib(gw: LiveGateway) -> None:
    body = b'{"query": "' + b"x" * (1024 * 1024) + b'", "modality": "web"}'
    headers = {"Authorization": f"Bearer {gw.setup.token}", "Content-Type": "application/json"}
    answer = gw.http.post("/v1/research/search", content=body, headers=headers)
    assert (answer.status_code, answer.json()) == (
        413,
        {"error": {"message": "request body over 1048576 bytes"}},
    )

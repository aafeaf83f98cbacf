"""PDF documents across API shapes: the Messages API's `document` blocks (the real anthropic SDK) and
the Responses API's `input_file` parts (the real openai SDK), through the gateway to a model served
over another wire on the loopback emulator. A PDF reaches OpenAI's chat as a `file` part, Gemini as
`inlineData`/`fileData`, Anthropic as a `document` block; a plain-text document is text; its title
and context are lines before it. What a wire cannot carry of either (a PDF on Ollama, a PDF's URL on
OpenAI's chat, citations, an uploaded file's id, another file type) is a 400 naming the client's own
field, with nothing sent: `test_gateway_bridged_images.py`, beside the images' refusals. A PDF is held at 3,000 tokens a page; the usage the upstream reports is charged."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from zarniwoop.llm.adapters.images import IMAGE_TOKENS, PAGE_TOKENS
from zarniwoop.surfaces.http.anthropic_wire import MessagesRequest, to_chat_request

from ..support.gateway import LiveGateway
from ..support.images import GATEWAYS, PROMPT_TOKENS, WIRE_MODELS, gw_fixture, image_gateway, sent

pytestmark = pytest.mark.xdist_group(__name__)
anthropic = pytest.importorskip("anthropic", reason="these tests drive the real anthropic SDK")
openai = pytest.importorskip("openai", reason="these tests drive the real openai SDK")
gateway = pytest.fixture(scope="module", params=GATEWAYS, name="gateway")(image_gateway)
gw = gw_fixture

PDF = base64.b64encode(
    b"%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n"
    b"2 0 obj <</Type /Pages /Kids [3 0 R 4 0 R] /Count 2>> endobj\n"
    b"3 0 obj <</Type /Page /Parent 2 0 R>> endobj\n4 0 obj <</Type/Page /Parent 2 0 R>> endobj\n"
    b"trailer <</Root 1 0 R>>\n%%EOF\n"
).decode()
"""A two-page PDF, base64."""
PAPER = "https://papers.example.org/attention.pdf"
DOCUMENT = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}}
ASK = {"type": "text", "text": "Summarise it."}


def _message(gw: LiveGateway, wire: str, *blocks: dict[str, Any]) -> Any:
    http = gw.http if gw.server is None else None
    client = anthropic.Anthropic(base_url=gw.url, http_client=http, max_retries=0, api_key=gw.setup.token)
    messages = [{"role": "user", "content": [*blocks, ASK]}]
    return client.messages.create(model=WIRE_MODELS[wire], max_tokens=64, messages=messages)


def test_a_pdf_reaches_the_openai_wire_as_a_file_part_named_by_its_title(gw: LiveGateway) -> None:
    answer = _message(gw, "openai", {**DOCUMENT, "title": "attention.pdf"})
    [body] = sent(gw, "openai")
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "attention.pdf\n"},
        {
            "type": "file",
            "file": {"filename": "attention.pdf", "file_data": f"data:application/pdf;base64,{PDF}"},
        },
        {"type": "text", "text": "Summarise it."},
    ]
    assert answer.content[0].text == "A cat."
    row = gw.usage_row(answer.model_extra["zarniwoop"]["usage_id"])
    assert row[5:7] == (PROMPT_TOKENS, 3)  # the upstream's count is charged, not the estimate


def test_gemini_gets_a_pdf_inline_and_one_by_url_to_fetch(gw: LiveGateway) -> None:
    by_url = {"type": "document", "source": {"type": "url", "url": PAPER}}
    _message(gw, "gemini", DOCUMENT, by_url)
    [body] = sent(gw, "gemini")
    assert body["contents"][0]["parts"] == [
        {"inlineData": {"mimeType": "application/pdf", "data": PDF}},
        {"fileData": {"mimeType": "application/pdf", "fileUri": PAPER}},
        {"text": "Summarise it."},
    ]


def test_a_plain_text_document_is_text_after_its_title_and_context(gw: LiveGateway) -> None:
    notes = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "Budgets reset monthly."},
        "title": "Meeting notes",
        "context": "From the March review.",
    }
    _message(gw, "ollama", notes)
    [body] = sent(gw, "ollama")
    assert body["messages"][-1] == {
        "role": "user",
        "content": "Meeting notes\nFrom the March review.\nBudgets reset monthly.Summarise it.",
    }


def test_an_anthropic_wire_model_is_sent_the_document_as_written(gw: LiveGateway) -> None:
    cited = {**DOCUMENT, "citations": {"enabled": True}}
    _message(gw, "anthropic", cited)
    [body] = sent(gw, "anthropic")
    assert body["messages"][0]["content"] == [cited, ASK]


def test_a_pdf_is_held_at_its_pages_and_one_by_url_at_a_page() -> None:
    def estimate(*blocks: dict[str, Any]) -> int:
        body = {
            "model": WIRE_MODELS["openai"],
            "max_tokens": 64,
            "messages": [{"role": "user", "content": [*blocks, ASK]}],
        }
        return to_chat_request(MessagesRequest.model_validate(body), body).estimated_input_tokens()

    plain = estimate()
    assert estimate(DOCUMENT) == plain + 2 * PAGE_TOKENS == plain + 6000
    assert estimate({"type": "document", "source": {"type": "url", "url": PAPER}}) == plain + PAGE_TOKENS
    assert PAGE_TOKENS > IMAGE_TOKENS


# -- the Responses API: `input_file` ---------------------------------------------------------------


def _respond(gw: LiveGateway, wire: str, file: dict[str, Any]) -> Any:
    content = [{"type": "input_file", **file}, {"type": "input_text", "text": "Summarise it."}]
    return gw.openai().responses.create(
        model=WIRE_MODELS[wire], input=[{"role": "user", "content": content}], store=False
    )


def test_an_input_file_reaches_anthropic_as_a_document_block(gw: LiveGateway) -> None:
    response = _respond(
        gw, "anthropic", {"file_data": f"data:application/pdf;base64,{PDF}", "filename": "a.pdf"}
    )
    [body] = sent(gw, "anthropic")
    assert body["messages"][0]["content"][0] == {**DOCUMENT, "title": "a.pdf"}
    assert response.output_text == "A cat."


def test_an_input_file_by_url_reaches_gemini_to_fetch(gw: LiveGateway) -> None:
    _respond(gw, "gemini", {"file_url": PAPER})
    [body] = sent(gw, "gemini")
    assert body["contents"][0]["parts"][0] == {"fileData": {"mimeType": "application/pdf", "fileUri": PAPER}}


def test_a_pdf_a_tool_returned_follows_the_result_on_the_openai_wire(gw: LiveGateway) -> None:
    call = {"type": "tool_use", "id": "toolu_9", "name": "Read", "input": {"file_path": "/tmp/a.pdf"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_9", "content": [DOCUMENT]}
    http = gw.http if gw.server is None else None
    client = anthropic.Anthropic(base_url=gw.url, http_client=http, max_retries=0, api_key=gw.setup.token)
    turns = [
        {"role": "user", "content": "Read /tmp/a.pdf"},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
    ]
    client.messages.create(model=WIRE_MODELS["openai"], max_tokens=64, messages=turns)
    [body] = sent(gw, "openai")
    assert body["messages"][2:] == [
        {"role": "tool", "content": "(attached: in the next message)", "tool_call_id": "toolu_9"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What the Read call toolu_9 returned:"},
                {
                    "type": "file",
                    "file": {"filename": "document.pdf", "file_data": f"data:application/pdf;base64,{PDF}"},
                },
            ],
        },
    ]

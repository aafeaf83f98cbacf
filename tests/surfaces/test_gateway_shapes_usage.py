"""Upstream usage is checked on every shape the gateway speaks (issue 43, `llm/usage_check.py`): a
native `/v1/messages` or `/v1/responses` upstream — whose answer otherwise passes back as it came —
reporting 10**30 input tokens for a 40 KB tool call is answered 200, charged the gateway's bounded
estimate (tool-call arguments counted) on a flagged usage row after exactly one upstream request,
and the answer's `usage` is that charged figure, not the upstream's. In-process (the fast tier)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from ..support.emulator import Reply
from ..support.gateway import MODELS, LiveGateway, gateway_tenants, live_gateway, upstream_path
from ..support.responses_upstream import RESPONSES_PATH
from ..support.settlement import anthropic_event, anthropic_started

pytestmark = pytest.mark.xdist_group(__name__)

anthropic = pytest.importorskip("anthropic", reason="these tests drive the real anthropic SDK")
openai = pytest.importorskip("openai", reason="these tests drive the real openai SDK")


ARGUMENTS = {"rows": [f"row {i}: " + "x" * 90 for i in range(400)]}
"""About 40 KB of tool-call arguments: ~10,000 tokens by the estimate."""
JUNK_INPUT = 10**30


def _tenants(emulator: Any) -> dict[str, Any]:
    tenants = gateway_tenants(emulator)
    tenants["acme"]["settings"]["ai.provider.openai.responsesApi"] = True  # served natively
    return tenants


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with live_gateway(tmp_path_factory.mktemp("shapes-usage"), tenants=_tenants) as gateway:
        yield gateway


def _charged(gw: LiveGateway, usage_id: str) -> tuple[int, int, bool]:
    [(tokens_in, tokens_out, estimated)] = gw.rows(
        "SELECT tokens_input, tokens_output, usage_estimated FROM llm_usage_records WHERE id = ?", usage_id
    )
    return tokens_in, tokens_out, bool(estimated)


def _estimated(tokens_in: int, tokens_out: int) -> None:
    assert 0 < tokens_in < 1_000  # the prompt's estimate, not the upstream's 10**30
    assert tokens_out >= len(json.dumps(ARGUMENTS)) // 4  # the tool call's arguments counted


def test_a_native_messages_answer_carries_the_checked_usage(gw: LiveGateway) -> None:
    gw.emulator.add(
        upstream_path("anthropic"),
        Reply.json(
            {
                "id": "msg_junk",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "store_rows", "input": ARGUMENTS}],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": JUNK_INPUT, "output_tokens": 10, "cache_read_input_tokens": 5},
            }
        ),
    )
    client = anthropic.Anthropic(base_url=gw.url, api_key=gw.setup.token, http_client=gw.http, max_retries=0)
    message = client.messages.create(
        model=MODELS["anthropic"], max_tokens=100, messages=[{"role": "user", "content": "Store the rows."}]
    )
    assert message.content[0].input == ARGUMENTS  # the paid answer is delivered whole
    extension = message.model_extra["zarniwoop"]
    tokens_in, tokens_out, estimated = _charged(gw, extension["usage_id"])
    assert estimated and extension["usage_estimated"] is True
    _estimated(tokens_in, tokens_out)
    assert (message.usage.input_tokens, message.usage.output_tokens) == (tokens_in, tokens_out)
    assert message.usage.cache_read_input_tokens == 0
    assert len(gw.emulator.requests(upstream_path("anthropic"))) == 1


def test_a_relayed_messages_stream_ends_with_the_checked_usage(gw: LiveGateway) -> None:
    arguments = json.dumps(ARGUMENTS)
    events = [
        {"type": "message_start", "message": anthropic_started(JUNK_INPUT)},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "store_rows", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": arguments},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 10},
        },
        {"type": "message_stop"},
    ]
    body = b"".join(anthropic_event(e) for e in events)
    gw.emulator.add(
        upstream_path("anthropic"), Reply(body=body, headers={"Content-Type": "text/event-stream"})
    )
    answer = gw.http.post(
        "/v1/messages",
        headers={"x-api-key": gw.setup.token},
        json={
            "model": MODELS["anthropic"],
            "max_tokens": 100,
            "stream": True,
            "messages": [{"role": "user", "content": "Store the rows."}],
        },
    )
    assert answer.status_code == 200
    sent = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")]
    [delta] = [e for e in sent if e["type"] == "message_delta"]
    tokens_in, tokens_out, estimated = _charged(gw, delta["zarniwoop"]["usage_id"])
    assert estimated
    _estimated(tokens_in, tokens_out)
    assert delta["usage"] == {"input_tokens": tokens_in, "output_tokens": tokens_out}
    assert len(gw.emulator.requests(upstream_path("anthropic"))) == 1


def test_a_native_responses_answer_carries_the_checked_usage(gw: LiveGateway) -> None:
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "store_rows",
        "arguments": json.dumps(ARGUMENTS),
        "status": "completed",
    }
    gw.emulator.add(
        RESPONSES_PATH,
        Reply.json(
            {
                "id": "resp_junk",
                "object": "response",
                "status": "completed",
                "model": "gpt-4o-mini",
                "output": [call],
                "usage": {"input_tokens": JUNK_INPUT, "output_tokens": -5, "total_tokens": 0},
            }
        ),
    )
    response = gw.openai().responses.create(model=MODELS["openai"], input="Store the rows.", store=False)
    assert json.loads(response.output[0].arguments) == ARGUMENTS
    extension = response.model_extra["zarniwoop"]
    tokens_in, tokens_out, estimated = _charged(gw, extension["usage_id"])
    assert estimated and extension["usage_estimated"] is True
    _estimated(tokens_in, tokens_out)
    assert (response.usage.input_tokens, response.usage.output_tokens) == (tokens_in, tokens_out)
    assert len(gw.emulator.requests(RESPONSES_PATH)) == 1

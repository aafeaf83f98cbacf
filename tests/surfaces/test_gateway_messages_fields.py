"""Every field the `anthropic` SDK's `messages.create` can send, on each upstream shape (issue 43):
the Anthropic-wire upstream gets it as sent, a bridged wire (OpenAI chat, Gemini) maps it — the row
says where it lands — or answers a 400 in Anthropic's error shape naming it; none is dropped. A
field the installed SDK adds and this table does not know fails the test by name, so a new field is
decided, not forgotten. In-process (Starlette's test client: the fast tier)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from ..support.emulator import RecordedRequest, Reply
from ..support.gateway import MODELS, anthropic_message, app_gateway, openai_completion, upstream_path
from ..support.gateway import LiveGateway as Gateway

pytestmark = pytest.mark.xdist_group(__name__)

anthropic = pytest.importorskip(
    "anthropic", reason="the table is the anthropic SDK's (pip install anthropic)"
)

WIRES = ("anthropic", "openai", "gemini")
REFUSED = "400"
Check = Callable[[dict[str, Any], RecordedRequest, "Served"], bool]
"""(the upstream's body, the upstream request, the answer and its ledger row) → the field arrived, mapped."""

TRANSPORT = {"stream", "extra_headers", "extra_query", "extra_body", "timeout"}
"""Parameters that are no request field: the transport's options, and `stream` (the SDK's switch
between an answer and an event stream, whose relay `test_gateway_messages.py` covers per wire)."""
OLDER = {"temperature", "top_k", "top_p"}
"""Fields this SDK version no longer names, as older clients and Claude Code still send them (in
`extra_body`)."""

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
HI = [{"role": "user", "content": "hi"}]
REPLIES = {
    "anthropic": anthropic_message("Hello.", 9, 2),
    "openai": openai_completion("Hello.", 9, 2),
    "gemini": Reply.json(
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "Hello."}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 2, "totalTokenCount": 11},
        }
    ),
}


@dataclass(frozen=True)
class Served:
    message: Any
    gateway: Gateway

    @property
    def session(self) -> str | None:
        """The ledger row's session: `metadata.user_id` on every wire."""
        usage_id = self.message.model_extra["zarniwoop"]["usage_id"]
        [(session,)] = self.gateway.rows("SELECT session_id FROM llm_usage_records WHERE id = ?", usage_id)
        return session  # type: ignore[no-any-return]


def _config(body: dict[str, Any]) -> dict[str, Any]:
    return body.get("generationConfig") or {}


def _gemini_tool(body: dict[str, Any]) -> str:
    return str(body["tools"][0]["functionDeclarations"][0]["name"])


# field → (a value the SDK may send, {wire: REFUSED | a check of where it lands}); the Anthropic
# wire is checked as forwarded (the body as sent) unless the row says otherwise
FIELDS: dict[str, tuple[Any, dict[str, Any]]] = {
    "model": (
        None,  # each wire's own model spec (`MODELS`)
        {
            "anthropic": lambda b, r, m: b["model"] == "claude-sonnet-4-5",
            "openai": lambda b, r, m: b["model"] == "gpt-4o-mini",
            "gemini": lambda b, r, m: "/models/gemini-2.5-pro:" in r.path,
        },
    ),
    "max_tokens": (
        77,
        {
            "openai": lambda b, r, m: b["max_tokens"] == 77,
            "gemini": lambda b, r, m: _config(b)["maxOutputTokens"] == 77,
        },
    ),
    "messages": (
        [{"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]}],
        {
            "openai": lambda b, r, m: b["messages"] == [{"role": "user", "content": "Weather in Oslo?"}],
            "gemini": lambda b, r, m: (
                b["contents"] == [{"role": "user", "parts": [{"text": "Weather in Oslo?"}]}]
            ),
        },
    ),
    "cache_control": (
        {"type": "ephemeral"},
        # the table's decision: the other wires cache prefixes on their own, no field asks them to
        {
            "openai": lambda b, r, m: "cache_control" not in json.dumps(b),
            "gemini": lambda b, r, m: "cache_control" not in json.dumps(b),
        },
    ),
    "container": ("c-1", {"openai": REFUSED, "gemini": REFUSED}),
    "diagnostics": ({"previous_message_id": "msg_0"}, {"openai": REFUSED, "gemini": REFUSED}),
    "inference_geo": ("us", {"openai": REFUSED, "gemini": REFUSED}),
    "metadata": (
        {"user_id": "u-42"},
        {
            "anthropic": lambda b, r, m: b["metadata"] == {"user_id": "u-42"} and m.session == "u-42",
            "openai": lambda b, r, m: b["user"] == "u-42" and m.session == "u-42",
            "gemini": lambda b, r, m: "u-42" not in json.dumps(b) and m.session == "u-42",
        },
    ),
    "output_config": ({"effort": "low"}, {"openai": REFUSED, "gemini": REFUSED}),
    "service_tier": ("auto", {"openai": REFUSED, "gemini": REFUSED}),
    "speed": ("fast", {"openai": REFUSED, "gemini": REFUSED}),
    "stop_sequences": (
        ["END"],
        {
            "openai": lambda b, r, m: b["stop"] == ["END"],
            "gemini": lambda b, r, m: _config(b)["stopSequences"] == ["END"],
        },
    ),
    "system": (
        "Be brief.",
        {
            "openai": lambda b, r, m: b["messages"][0] == {"role": "system", "content": "Be brief."},
            "gemini": lambda b, r, m: b["systemInstruction"] == {"parts": [{"text": "Be brief."}]},
        },
    ),
    "temperature": (
        0.3,
        {
            "openai": lambda b, r, m: b["temperature"] == 0.3,
            "gemini": lambda b, r, m: _config(b)["temperature"] == 0.3,
        },
    ),
    "thinking": (
        {"type": "enabled", "budget_tokens": 1024},
        {
            "openai": REFUSED,  # no such parameter; `reasoning_effort` has no token budget to map to
            # the budget at most `max_tokens` (16 here), which the gateway holds
            "gemini": lambda b, r, m: (
                _config(b)["thinkingConfig"] == {"thinkingBudget": 16, "includeThoughts": True}
            ),
        },
    ),
    "tool_choice": (
        {"type": "any"},
        {
            "openai": lambda b, r, m: b["tool_choice"] == "required",
            "gemini": lambda b, r, m: b["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}},
        },
    ),
    "tools": (
        [WEATHER],
        {
            "openai": lambda b, r, m: [t["function"]["name"] for t in b["tools"]] == ["get_weather"],
            "gemini": lambda b, r, m: _gemini_tool(b) == "get_weather",
        },
    ),
    "top_k": (5, {"openai": REFUSED, "gemini": lambda b, r, m: _config(b)["topK"] == 5}),
    "top_p": (
        0.5,
        {"openai": lambda b, r, m: b["top_p"] == 0.5, "gemini": lambda b, r, m: _config(b)["topP"] == 0.5},
    ),
    "user_profile_id": ("up_1", {"openai": REFUSED, "gemini": REFUSED}),
    "workspace_id": ("wrkspc_1", {"openai": REFUSED, "gemini": REFUSED}),
}

HEADERS = {"user_profile_id": "anthropic-user-profile-id", "workspace_id": "anthropic-workspace-id"}
"""Parameters the SDK sends as headers, not body fields (forwarded to Anthropic as sent)."""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with app_gateway(tmp_path_factory.mktemp("messages-fields")) as gateway:
        yield gateway


def test_the_table_knows_every_field_the_sdk_can_send() -> None:
    from anthropic.resources.messages import Messages

    sdk = set(inspect.signature(Messages.create).parameters) - {"self"} - TRANSPORT
    assert sorted((sdk | OLDER) ^ set(FIELDS)) == [], "fields of the SDK this table does not decide"


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("field", sorted(FIELDS))
def test_each_field_is_forwarded_mapped_or_refused_by_name(gateway: Gateway, field: str, wire: str) -> None:
    value, outcomes = FIELDS[field]
    gateway.reset().emulator.add(upstream_path(wire), REPLIES[wire])
    params: dict[str, Any] = {"model": MODELS[wire], "max_tokens": 16, "messages": HI}
    if field == "tool_choice":
        params["tools"] = [WEATHER]  # meaningful with tools only
    if field in OLDER:
        params["extra_body"] = {field: value}
    elif value is not None:
        params[field] = value
    client = anthropic.Anthropic(
        base_url=gateway.url, http_client=gateway.http, max_retries=0, api_key=gateway.setup.token
    )
    expected = outcomes.get(wire)
    if expected == REFUSED:
        with pytest.raises(anthropic.BadRequestError) as caught:
            client.messages.create(**params)
        error = caught.value.body
        assert (error["type"], error["error"]["type"]) == ("error", "invalid_request_error")
        assert error["error"]["message"].startswith(HEADERS.get(field, field) + ":"), error
        assert gateway.emulator.requests(upstream_path(wire)) == []
        return
    message = client.messages.create(**params)
    assert message.content[0].text == "Hello."
    [request] = gateway.emulator.requests(upstream_path(wire))
    body = request.json()
    if expected is not None:
        assert expected(body, request, Served(message, gateway)), body
    elif field in HEADERS:  # native: the header as sent
        assert request.header(HEADERS[field]) == value
    else:  # native: the field as sent
        assert body[field] == value

"""Upstream usage is data to check, not to trust (issue 43, `llm/usage_check.py`), through the real
gateway on loopback with the real openai SDK: an upstream answering a tool call with 40 KB of
arguments reports `prompt_tokens` of 10**30, -1000000, "abc", 1.5, or no usage at all. Each call is
answered 200; its usage row holds the gateway's bounded estimate — the prompt plus the tool-call
arguments — flagged `usage_estimated`; no traceback is logged; no hold is left; and exactly one
upstream request was made (a junk count never fails over). In-process (the fast tier) and under a
real `zarniwoop serve` (the `process` tier)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from zarniwoop.llm.adapters import ADAPTERS
from zarniwoop.llm.usage_check import estimated_usage
from zarniwoop.surfaces.http.openai_wire import ChatCompletionRequest

from ..support.emulator import Emulator, Reply
from ..support.gateway import MODELS, LiveGateway, live_gateway, openai_chunks, upstream_path
from ..support.served import Served

# its module-scoped server is set up once: the module's tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)

openai = pytest.importorskip("openai", reason="these tests drive the real openai SDK (pip install openai)")


PATH = upstream_path("openai")
ARGUMENTS = json.dumps({"rows": [f"row {i}: " + "x" * 90 for i in range(400)]})
"""About 40 KB of tool-call arguments: ~10,000 tokens by the estimate."""
TOOL = {
    "type": "function",
    "function": {"name": "store_rows", "parameters": {"type": "object", "properties": {}}},
}
MESSAGES = [{"role": "user", "content": "Store the rows."}]
JUNK: dict[str, Any] = {
    "huge": {"prompt_tokens": 10**30, "completion_tokens": 10},
    "negative": {"prompt_tokens": -1_000_000, "completion_tokens": 10},
    "text": {"prompt_tokens": "abc", "completion_tokens": 10},
    "fraction": {"prompt_tokens": 1.5, "completion_tokens": 10},
    "absent": None,
}


def _answer(usage: Any) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": "store_rows", "arguments": ARGUMENTS}}
    body: dict[str, Any] = {
        "id": "chatcmpl-junk",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "finish_reason": "tool_calls",
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def _stream(usage: Any) -> Reply:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "store_rows", "arguments": ""},
    }
    choices = [[{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}}]]
    for start in range(0, len(ARGUMENTS), 4000):
        piece = {"index": 0, "function": {"arguments": ARGUMENTS[start : start + 4000]}}
        choices.append([{"index": 0, "delta": {"tool_calls": [piece]}}])
    choices.append([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}])
    return openai_chunks(choices, usage)


EXPECTED = estimated_usage(
    ChatCompletionRequest.model_validate(
        {"model": MODELS["openai"], "messages": MESSAGES, "tools": [TOOL]}
    ).to_chat_request(),
    ADAPTERS["openai"].parse(json.dumps(_answer(None)).encode()),
)
"""The gateway's estimate: the prompt's plus the tool call's name and arguments (~10,000 tokens)."""


@dataclass
class Gateway:
    emulator: Emulator
    live: LiveGateway
    token: str

    @property
    def server(self) -> Served | None:
        return self.live.server

    def client(self) -> Any:
        return self.live.openai(self.token)

    def read(self, sql: str, *args: Any) -> list[Any]:
        return self.live.rows(sql, *args)


@pytest.fixture(scope="module", params=["app", pytest.param("serve", marks=pytest.mark.process)])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with live_gateway(tmp_path_factory.mktemp("usage"), request.param) as live:
        yield Gateway(live.emulator, live, live.setup.token)


@pytest.fixture
def gw(gateway: Gateway) -> Gateway:
    gateway.emulator.reset()
    return gateway


@pytest.mark.parametrize("stream", [False, True], ids=["completion", "stream"])
@pytest.mark.parametrize("junk", sorted(JUNK))
def test_junk_upstream_usage_is_charged_the_bounded_estimate_flagged(
    gw: Gateway, junk: str, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    usage = JUNK[junk]
    if stream:
        gw.emulator.add(PATH, _stream(usage))
    else:
        gw.emulator.add(PATH, Reply.json(_answer(usage)))
    logged_before = len(gw.server.output) if gw.server else 0
    caplog.set_level(logging.INFO)
    options: dict[str, Any] = {"model": MODELS["openai"], "messages": MESSAGES, "tools": [TOOL]}
    if stream:
        chunks = list(
            gw.client().chat.completions.create(
                **options, stream=True, stream_options={"include_usage": True}
            )
        )
        arguments = "".join(
            c.choices[0].delta.tool_calls[0].function.arguments or ""
            for c in chunks
            if c.choices and c.choices[0].delta.tool_calls
        )
        answered_usage, usage_id = chunks[-1].usage, chunks[-2].model_extra["zarniwoop"]["usage_id"]
        estimated_flag = chunks[-2].model_extra["zarniwoop"]["usage_estimated"]
    else:
        completion = gw.client().chat.completions.create(**options)  # a 200, not a 500 or a 502
        arguments = completion.choices[0].message.tool_calls[0].function.arguments
        answered_usage = completion.usage
        usage_id = completion.model_extra["zarniwoop"]["usage_id"]
        estimated_flag = completion.model_extra["zarniwoop"]["usage_estimated"]
    assert arguments == ARGUMENTS  # the paid answer is delivered whole
    assert (answered_usage.prompt_tokens, answered_usage.completion_tokens) == (
        EXPECTED.input,
        EXPECTED.output,
    )
    assert estimated_flag is True
    [row] = gw.read(
        "SELECT tokens_input, tokens_output, usage_estimated, outcome FROM llm_usage_records WHERE id = ?",
        usage_id,
    )
    assert (row[0], row[1], bool(row[2]), row[3]) == (EXPECTED.input, EXPECTED.output, True, "ok")
    assert EXPECTED.output > 10_000  # the tool-call arguments are counted
    assert gw.read("SELECT COUNT(*) FROM llm_quota_holds")[0][0] == 0
    assert len(gw.emulator.requests(PATH)) == 1  # no failover, no retry
    logs = (
        gw.server.output[logged_before:]
        if gw.server
        else [r.getMessage() + (str(r.exc_info) if r.exc_info else "") for r in caplog.records]
    )
    assert not [line for line in logs if "Traceback" in line or "exc_info" in line]
    if gw.server is None:
        assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
        said = [r.getMessage() for r in caplog.records if "charged" in r.getMessage()]
        assert len(said) == 1, said  # logged once


def test_a_sound_report_is_charged_as_it_came_and_not_flagged(gw: Gateway) -> None:
    gw.emulator.add(PATH, Reply.json(_answer({"prompt_tokens": 41, "completion_tokens": 9876})))
    completion = gw.client().chat.completions.create(model=MODELS["openai"], messages=MESSAGES, tools=[TOOL])
    served_by = completion.model_extra["zarniwoop"]
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (41, 9876)
    assert served_by["usage_estimated"] is False
    [row] = gw.read(
        "SELECT tokens_input, tokens_output, usage_estimated FROM llm_usage_records WHERE id = ?",
        served_by["usage_id"],
    )
    assert (row[0], row[1], bool(row[2])) == (41, 9876, False)

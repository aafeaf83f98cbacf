"""OpenAI's Responses API answer: the `response` object and its typed event stream.

The object's `output` is the upstream's items as they came where the wire served `/responses`
natively, else built from the answer (`reasoning`, `message` with `output_text`, `function_call`s).
`usage` is what the call was settled with (`llm/settlement.py`), so the client sees what it paid.

The stream (https://platform.openai.com/docs/api-reference/responses-streaming), every event with
`type` and `sequence_number`: `response.created`, `response.in_progress`, then per item
`response.output_item.added` … `response.output_item.done` — text as `response.content_part.added`,
`response.output_text.delta`s as they arrive, `response.output_text.done`, `response.content_part.done`;
a tool call as `response.function_call_arguments.delta` and `.done` — then `response.completed` with
`usage`, or `response.failed` with the error.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from ...llm.adapters.base import NATIVE_ANSWER
from ...llm.adapters.response import ChatResponse, TokenUsage
from ...llm.call import LlmResult
from .openai_wire import served_json
from .responses_wire import ResponsesRequest

ECHOED = (
    "instructions",
    "max_output_tokens",
    "parallel_tool_calls",
    "temperature",
    "tool_choice",
    "tools",
    "top_p",
    "user",
    "truncation",
)


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def output_items(response: ChatResponse, message_id: str) -> list[dict[str, Any]]:
    """The answer's `output`: the native upstream's items (its first message renamed `message_id`, the
    id the stream announced), else reasoning, the message and the function calls built from it."""
    native = _native(response).get("output")
    if native:
        items, renamed = [], False
        for item in native:
            item = dict(item)
            if item.get("type") == "message" and not renamed:
                item["id"], renamed = message_id, True
            items.append(item)
        return items
    items = []
    if response.reasoning:
        items.append(
            {
                "type": "reasoning",
                "id": new_id("rs"),
                "summary": [{"type": "summary_text", "text": response.reasoning}],
            }
        )
    if response.text or not response.tool_calls:
        items.append(message_item(message_id, response.text, "completed"))
    items += [function_call_item(c.id, c.name, c.arguments, "completed") for c in response.tool_calls]
    return items


def _native(response: ChatResponse) -> Mapping[str, Any]:
    """The response object a native upstream sent (`NATIVE_ANSWER`), or nothing: a bridged answer."""
    native = response.metadata.get(NATIVE_ANSWER)
    return native if isinstance(native, Mapping) else {}


def message_item(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    content = [] if text is None else [text_part(text)]
    return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content}


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def function_call_item(call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": "fc_" + call_id.removeprefix("call_"),
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


def usage_json(usage: TokenUsage, response: ChatResponse | None) -> dict[str, Any]:
    """`usage` with the settled counts; the details as the upstream reported them, where it did."""
    meta = response.metadata if response is not None else {}
    upstream = _native(response).get("usage") if response is not None else None
    upstream = upstream if isinstance(upstream, Mapping) else {}
    cached = meta.get("cachedInputTokens") or 0
    reasoning = meta.get("reasoningTokens") or 0
    return {
        "input_tokens": usage.input,
        "input_tokens_details": dict(upstream.get("input_tokens_details") or {"cached_tokens": cached}),
        "output_tokens": usage.output,
        "output_tokens_details": dict(
            upstream.get("output_tokens_details") or {"reasoning_tokens": reasoning}
        ),
        "total_tokens": usage.total,
    }


def response_json(
    response_id: str,
    created: int,
    body: ResponsesRequest,
    *,
    status: str,
    stored: bool,
    result: LlmResult | None = None,
    output: list[dict[str, Any]] | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A `response` object; `model` is what served, as `<instance>:<model>`, once known."""
    answer = _native(result.response) if result is not None else {}  # the native upstream's own fields
    dropped = ("id", "usage", "model", "store", "output")
    out: dict[str, Any] = {k: v for k, v in answer.items() if k not in dropped}
    sent = body.model_dump(exclude_none=True, by_alias=True)
    for name in ECHOED:
        out.setdefault(name, sent.get(name))
    out.setdefault("tools", [])
    out.setdefault(
        "parallel_tool_calls", True if body.parallel_tool_calls is None else body.parallel_tool_calls
    )
    out.setdefault("tool_choice", "auto")
    out.setdefault("text", sent.get("text") or {"format": {"type": "text"}})
    out.setdefault("reasoning", sent.get("reasoning") or {"effort": None, "summary": None})
    incomplete = None
    if result is not None and result.response.cut_short == "length":
        status, incomplete = "incomplete", {"reason": "max_output_tokens"}
    out.update(
        id=response_id,
        object="response",
        created_at=created,
        status=status,
        error=error,
        incomplete_details=incomplete,
        model=f"{result.instance}:{result.model}" if result is not None else body.model,
        output=output or [],
        previous_response_id=body.previous_response_id,
        store=stored,
        metadata=body.metadata or {},
        usage=usage_json(result.usage, result.response) if result is not None else None,
    )
    if result is not None:
        out["zarniwoop"] = served_json(result)
    return out


class ResponseEvents:
    """The typed event stream of one response, one SSE event per call (`bytes`)."""

    def __init__(self, response_id: str, created: int, body: ResponsesRequest, stored: bool) -> None:
        self.response_id, self.created, self.body, self.stored = response_id, created, body, stored
        self.sequence = 0
        self.message_id = new_id("msg")
        self.message_index: int | None = None
        self.next_index = 0
        self.text: list[str] = []

    def event(self, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        return f"event: {kind}\ndata: {data}\n\n".encode()

    def _snapshot(self, status: str, **kw: Any) -> dict[str, Any]:
        return response_json(
            self.response_id, self.created, self.body, status=status, stored=self.stored, **kw
        )

    def start(self) -> list[bytes]:
        snapshot = self._snapshot("in_progress")
        return [
            self.event("response.created", response=snapshot),
            self.event("response.in_progress", response=snapshot),
        ]

    def text_delta(self, delta: str) -> list[bytes]:
        out = []
        if self.message_index is None:
            self.message_index, self.next_index = self.next_index, self.next_index + 1
            out.append(
                self.event(
                    "response.output_item.added",
                    output_index=self.message_index,
                    item=message_item(self.message_id, None, "in_progress"),
                )
            )
            out.append(
                self.event(
                    "response.content_part.added",
                    item_id=self.message_id,
                    output_index=self.message_index,
                    content_index=0,
                    part=text_part(""),
                )
            )
        self.text.append(delta)
        out.append(
            self.event(
                "response.output_text.delta",
                item_id=self.message_id,
                output_index=self.message_index,
                content_index=0,
                delta=delta,
                logprobs=[],
            )
        )
        return out

    def finish(self, result: LlmResult) -> tuple[list[bytes], dict[str, Any]]:
        """The remaining events (every item closed, `response.completed`) and the final object."""
        output = output_items(result.response, self.message_id)
        out: list[bytes] = []
        for item in output:
            if item.get("type") == "message" and item.get("id") == self.message_id:
                out += self._close_message(item)
            else:
                out += self._whole_item(item)
        final = self._snapshot("completed", result=result, output=output)
        out.append(self.event(f"response.{final['status']}", response=final))
        return out, final

    def _close_message(self, item: dict[str, Any]) -> list[bytes]:
        text = "".join(p.get("text") or "" for p in item.get("content") or () if isinstance(p, dict))
        out = []
        if self.message_index is None:  # nothing came as deltas: say it once
            out += self.text_delta(text) if text else self.text_delta("")
        index, where = self.message_index, {"item_id": self.message_id, "content_index": 0}
        out.append(
            self.event("response.output_text.done", output_index=index, **where, text=text, logprobs=[])
        )
        out.append(
            self.event("response.content_part.done", output_index=index, **where, part=text_part(text))
        )
        out.append(self.event("response.output_item.done", output_index=index, item=item))
        return out

    def _whole_item(self, item: dict[str, Any]) -> list[bytes]:
        index, self.next_index = self.next_index, self.next_index + 1
        if item.get("type") != "function_call":
            return [
                self.event("response.output_item.added", output_index=index, item=item),
                self.event("response.output_item.done", output_index=index, item=item),
            ]
        item_id, arguments = item.get("id"), str(item.get("arguments") or "")
        return [
            self.event(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            ),
            self.event(
                "response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=arguments
            ),
            self.event(
                "response.function_call_arguments.done",
                item_id=item_id,
                output_index=index,
                name=item.get("name"),
                arguments=arguments,
            ),
            self.event("response.output_item.done", output_index=index, item=item),
        ]

    def failed(self, error: Mapping[str, Any]) -> bytes:
        detail = {"code": error.get("code") or "server_error", "message": error.get("message") or "failed"}
        return self.event("response.failed", response=self._snapshot("failed", error=detail))


__all__ = ["ResponseEvents", "new_id", "output_items", "response_json", "usage_json"]

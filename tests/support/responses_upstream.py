"""Scripted LLM upstreams for the gateway's `/v1/responses` tests, one per wire, on the loopback
emulator: OpenAI's Responses API (`/v1/responses`, the native path), Anthropic Messages and Gemini
generateContent (bridged). Each plays one tool loop the same way, whatever its wire:

- tools offered and no tool result in the conversation yet: a call of the first tool with `ARGUMENTS`;
- JSON asked for (a schema, JSON mode): `JSON_ANSWER`;
- a tool result present: `AFTER_TOOL`; else `GREETING`.

Every answer reports `USAGE` (input, output), streamed or not, so budgets can be checked exactly.

    upstream = ToolLoopUpstream(emulator)        # mounts the three routes
    upstream.bodies("responses")                 # what the gateway sent, as parsed JSON
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .emulator import Emulator, RecordedRequest, Reply

USAGE = (20, 10)
GREETING = "Hello from the emulated upstream."
AFTER_TOOL = "It is 21 degrees in Paris."
JSON_ANSWER = '{"city": "Paris", "temperature_c": 21}'
ARGUMENTS = '{"city": "Paris"}'
CALL_ID = "call_weather_1"
RESPONSES_PATH = "/v1/responses"
ANTHROPIC_PATH = "/v1/messages"
GEMINI_MODEL = "gemini-2.5-pro"
PATHS = {
    "responses": RESPONSES_PATH,
    "anthropic": ANTHROPIC_PATH,
    "gemini": f"/v1beta/models/{GEMINI_MODEL}:generateContent",
    "gemini-stream": f"/v1beta/models/{GEMINI_MODEL}:streamGenerateContent",
}


def _sse(events: list[dict[str, Any]], named: bool) -> bytes:
    out = []
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        out.append(f"{head}data: {json.dumps(event)}\n\n")
    return "".join(out).encode()


def _stream_reply(body: bytes, **kw: Any) -> Reply:
    return Reply(body=body, headers={"Content-Type": "text/event-stream"}, **kw)


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]


class ToolLoopUpstream:
    def __init__(
        self,
        emulator: Emulator,
        *,
        usage: tuple[int, int] | Callable[[], tuple[int, int]] = USAGE,
        words: int = 0,
        **reply: Any,
    ) -> None:
        """`usage`: what each answer reports, or a function drawing it per answer; `words`: answer
        with that many words instead of the scripted texts (a long stream to cut)."""
        self.emulator = emulator
        self._usage = usage
        self.words = words
        self.reply = reply
        """Further `Reply` options for every answer (`chunk_delay=…`, `chunks=…`)."""
        emulator.add(RESPONSES_PATH, self._responses)
        emulator.add(ANTHROPIC_PATH, self._anthropic)
        emulator.add(PATHS["gemini"], self._gemini)
        emulator.add(PATHS["gemini-stream"], self._gemini)

    def bodies(self, wire: str) -> list[dict[str, Any]]:
        paths = [PATHS["gemini"], PATHS["gemini-stream"]] if wire == "gemini" else [PATHS[wire]]
        return [r.json() for path in paths for r in self.emulator.requests(path)]

    # -- what to answer -------------------------------------------------------------------------

    @property
    def usage(self) -> tuple[int, int]:
        return self._usage() if callable(self._usage) else self._usage

    def _decide(self, tools: list[str], answered: bool, wants_json: bool) -> tuple[str, str | None]:
        """(text, tool name to call or None)."""
        if self.words:
            return " ".join(f"w{i}" for i in range(self.words)), None
        if tools and not answered:
            return "", tools[0]
        if wants_json:
            return JSON_ANSWER, None
        return (AFTER_TOOL if answered else GREETING), None

    # -- OpenAI Responses ----------------------------------------------------------------------

    def _responses(self, request: RecordedRequest) -> Reply:
        body, drawn = request.json(), self.usage
        items = body.get("input") if isinstance(body.get("input"), list) else []
        answered = any(i.get("type") == "function_call_output" for i in items)
        fmt = ((body.get("text") or {}).get("format") or {}).get("type")
        tools = [t["name"] for t in body.get("tools") or () if t.get("type") == "function"]
        text, tool = self._decide(tools, answered, fmt in ("json_schema", "json_object"))
        output: list[dict[str, Any]] = []
        if tool:
            output.append(
                {
                    "type": "function_call",
                    "id": "fc_up_1",
                    "call_id": CALL_ID,
                    "name": tool,
                    "arguments": ARGUMENTS,
                    "status": "completed",
                }
            )
        else:
            output.append(
                {
                    "type": "message",
                    "id": "msg_up_1",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
                }
            )
        usage = {
            "input_tokens": drawn[0],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": drawn[1],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": sum(drawn),
        }
        answer = {
            "id": "resp_upstream_1",
            "object": "response",
            "created_at": 1,
            "status": "completed",
            "model": body.get("model"),
            "output": output,
            "usage": usage,
            "service_tier": "default",
            "tools": body.get("tools") or [],
        }
        if not body.get("stream"):
            return Reply.json(answer, **self.reply)
        start = {**answer, "status": "in_progress", "output": [], "usage": None}
        events: list[dict[str, Any]] = [{"type": "response.created", "response": start}]
        item = output[0]
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress"},
            }
        )
        if tool:
            events.append(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "delta": ARGUMENTS,
                }
            )
        else:
            events += [
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": w,
                }
                for w in _words(text)
            ]
        events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
        events.append({"type": "response.completed", "response": answer})
        return _stream_reply(_sse(events, named=True), **self.reply)

    # -- Anthropic Messages -----------------------------------------------------------------

    def _anthropic(self, request: RecordedRequest) -> Reply:
        body, drawn = request.json(), self.usage
        answered = any(
            isinstance(m.get("content"), list) and any(b.get("type") == "tool_result" for b in m["content"])
            for m in body["messages"]
        )
        wants_json = "output_format" in body or "JSON" in str(body.get("system") or "")
        text, tool = self._decide([t["name"] for t in body.get("tools") or ()], answered, wants_json)
        block = (
            {"type": "tool_use", "id": "toolu_1", "name": tool, "input": json.loads(ARGUMENTS)}
            if tool
            else {"type": "text", "text": text}
        )
        stop = "tool_use" if tool else "end_turn"
        usage = {"input_tokens": drawn[0], "output_tokens": drawn[1]}
        if not body.get("stream"):
            return Reply.json(
                {
                    "id": "msg_up_1",
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "content": [block],
                    "stop_reason": stop,
                    "usage": usage,
                },
                **self.reply,
            )
        events: list[dict[str, Any]] = [
            {
                "type": "message_start",
                "message": {
                    "id": "msg_up_1",
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "content": [],
                    "usage": {**usage, "output_tokens": 1},
                },
            },
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {**block, "input": {}} if tool else {"type": "text", "text": ""},
            },
        ]
        if tool:
            events.append(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": ARGUMENTS},
                }
            )
        else:
            events += [
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}}
                for w in _words(text)
            ]
        events += [
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop},
                "usage": {"output_tokens": drawn[1]},
            },
            {"type": "message_stop"},
        ]
        return _stream_reply(_sse(events, named=True), **self.reply)

    # -- Gemini generateContent ---------------------------------------------------------------

    def _gemini(self, request: RecordedRequest) -> Reply:
        body, drawn = request.json(), self.usage
        answered = any("functionResponse" in p for c in body["contents"] for p in c["parts"])
        wants_json = (body.get("generationConfig") or {}).get("responseMimeType") == "application/json"
        names = [d["name"] for t in body.get("tools") or () for d in t.get("functionDeclarations") or ()]
        text, tool = self._decide(names, answered, wants_json)
        usage = {
            "promptTokenCount": drawn[0],
            "candidatesTokenCount": drawn[1],
            "totalTokenCount": sum(drawn),
        }
        parts = (
            [{"functionCall": {"name": tool, "args": json.loads(ARGUMENTS)}}] if tool else [{"text": text}]
        )
        whole = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
            "usageMetadata": usage,
            "modelVersion": GEMINI_MODEL,
        }
        if not request.path.endswith("streamGenerateContent"):
            return Reply.json(whole, **self.reply)
        if tool:
            return _stream_reply(_sse([whole], named=False), **self.reply)
        chunks: list[dict[str, Any]] = [
            {"candidates": [{"content": {"role": "model", "parts": [{"text": w}]}}]} for w in _words(text)
        ]
        chunks[-1] = {
            **chunks[-1],
            "candidates": [{**chunks[-1]["candidates"][0], "finishReason": "STOP"}],
            "usageMetadata": usage,
        }
        return _stream_reply(_sse(chunks, named=False), **self.reply)

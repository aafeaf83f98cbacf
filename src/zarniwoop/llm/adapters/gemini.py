"""Google Gemini: `POST {baseUrl}/v1beta/models/{model}:generateContent` (and `:streamGenerateContent`).

https://ai.google.dev/api/generate-content — the key goes in the `x-goog-api-key` header (never
in the URL, where it would end up in access logs). Roles are `user` and `model`; the system
prompt is `systemInstruction`; tools are `functionDeclarations`; JSON output is
`responseMimeType: application/json` (+ `responseJsonSchema`).

Answers: `candidates[0].content.parts[]`, each `{text}`, `{text, thought: true}` (a thought
summary → reasoning) or `{functionCall: {name, args, id?}, thoughtSignature?}` — args an object;
ids are made up (`call_0`, …) where Gemini sends none, and a call's thought signature rides in its
id (`signatures.py`), to come back on the functionCall part of the next request of a tool loop.
`finishReason` is `STOP` even for function calls.

Usage: `promptTokenCount` in; everything else of `totalTokenCount` out — that includes the
`thoughtsTokenCount`, which is billed as output.

Streaming without `alt=sse` is one JSON array whose elements are partial responses; with SSE
each `data:` is one. Both are read; usage is the last element's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...contract.errors import InvalidRequestError, ParseError
from ...contract.protocol import RequestSpec
from .base import ChatMessage, ChatRequest, Endpoint, Framing, StreamDelta
from .errors import map_error, stream_object
from .fields import number_field, thinking_budget, whole_number
from .ids import gemini_resource
from .images import checked
from .options import refuse_unsupported, tool_strict
from .parts import PartsStream, logprob_entry
from .response import ChatResponse, ToolCall, UsageReport
from .results import results_with_images_after
from .signatures import SKIP_VALIDATOR, made_up_id, signed_id, split_id

THINKING_BUDGETS = {"low": 1024, "medium": 8192, "high": 24576}
"""`reasoning_effort` as `thinkingConfig.thinkingBudget`, the budgets Google's own OpenAI-compatible
endpoint uses (https://ai.google.dev/gemini-api/docs/openai#thinking). Anthropic's `thinking`
(`{"type": "enabled", "budget_tokens": N}`, from `/v1/messages`) is the same `thinkingBudget`, at
most `max_tokens` (`fields.thinking_budget`), with `includeThoughts: true` — the thought summaries
come back as reasoning, Anthropic's `thinking` blocks. So the hold (input estimate + `max_tokens`)
covers the budget; `maxOutputTokens` is observed to bound thoughts and answer together, as Anthropic's
`max_tokens` does (googleapis/python-genai#2062), and a model that thinks past its budget anyway is
charged its report as it came, thoughts included (`llm/settlement.py`: a budget is passed by at most
one call's excess). OpenAI fields generateContent
has no equivalent of (`parallel_tool_calls`: it decides alone whether calls run in parallel;
`metadata`: `labels` exist on Vertex AI only) are refused by the table of `fields.py`."""


class GeminiAdapter:
    wire_type = "gemini"
    framing: Framing = "json-array"
    native_shape: str | None = None

    def build(self, request: ChatRequest, endpoint: Endpoint, model: str) -> RequestSpec:
        further = refuse_unsupported(request, self.wire_type)
        options = request.options
        config: dict[str, Any] = {"maxOutputTokens": request.max_tokens}
        if request.temperature is not None:
            config["temperature"] = request.temperature
        config.update(_further(further, request.max_tokens))
        for name, value in (
            ("topP", options.top_p),
            ("seed", options.seed),
            ("stopSequences", list(options.stop) or None),
            ("responseLogprobs", options.logprobs or None),
            ("logprobs", options.top_logprobs if options.logprobs else None),
        ):
            if value is not None:
                config[name] = value
        if request.wants_json:
            config["responseMimeType"] = "application/json"
            if request.json_schema is not None:
                config["responseJsonSchema"] = dict(request.json_schema)
        body: dict[str, Any] = {"contents": _contents(request), "generationConfig": config}
        system = request.system_text()
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        if request.tools:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
                        for t in request.tools
                    ]
                }
            ]
            auto = "VALIDATED" if tool_strict(request) else "AUTO"  # schema adherence, calls optional
            mode = {"required": "ANY", "none": "NONE"}.get(request.tool_choice or "auto", auto)
            if request.tool_choice and request.tool_choice not in ("auto", "required", "none"):
                body["toolConfig"] = {
                    "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [request.tool_choice]}
                }
            elif mode != "AUTO":
                body["toolConfig"] = {"functionCallingConfig": {"mode": mode}}
        method = "streamGenerateContent" if request.stream else "generateContent"
        return endpoint.post(f"/v1beta/{gemini_resource(model)}:{method}", body, {}, ("x-goog-api-key", ""))

    def parse(self, body: bytes) -> ChatResponse:
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ParseError(f"generateContent response is not JSON ({exc})") from None
        if isinstance(data, list):  # a recorded stream body handed to parse(): fold it
            stream = GeminiStream()
            for item in data:
                stream.feed(None, item)
            return stream.result()
        if not isinstance(data, dict) or ("candidates" not in data and "usageMetadata" not in data):
            raise ParseError("generateContent response without candidates")
        stream = GeminiStream()
        stream.feed(None, data)
        return stream.result()

    error = staticmethod(map_error)

    def accumulator(self) -> GeminiStream:
        return GeminiStream()


class GeminiStream(PartsStream):
    def __init__(self) -> None:
        super().__init__()
        self.usage_meta: Mapping[str, Any] = {}
        self.metadata: dict[str, Any] = {}

    def feed(self, event: str | None, payload: Any) -> list[StreamDelta]:
        payload = stream_object(payload, "gemini", "stream element")
        self.model = payload.get("modelVersion") or self.model
        if payload.get("responseId"):
            self.metadata["responseId"] = payload["responseId"]
        if payload.get("usageMetadata"):
            self.usage_meta = payload["usageMetadata"]
        deltas: list[StreamDelta] = []
        for candidate in (payload.get("candidates") or ())[:1]:
            for part in (candidate.get("content") or {}).get("parts") or ():
                if "functionCall" in part:
                    call = part["functionCall"] or {}
                    own, signature = call.get("id"), part.get("thoughtSignature")
                    call_id = own if isinstance(own, str) and own else made_up_id(len(self.calls))
                    tool = ToolCall.create(
                        signed_id(call_id, signature if isinstance(signature, str) else None),
                        str(call.get("name", "")),
                        call.get("args") or {},
                    )
                    deltas.append(self.called(tool))
                elif part.get("text"):
                    deltas.append(self.took("reasoning" if part.get("thought") else "text", part["text"]))
            if candidate.get("finishReason"):
                self.finish_reason = candidate["finishReason"]
            self.logprobs.extend(_logprobs(candidate.get("logprobsResult")))
        return deltas

    def result(self) -> ChatResponse:
        usage = None
        meta = self.usage_meta
        if isinstance(meta, Mapping) and meta:
            report = UsageReport(meta)
            prompt = report.count("promptTokenCount")
            output = (
                report.count("totalTokenCount") - prompt
                if report.has("totalTokenCount")
                else report.count("candidatesTokenCount", required=False)
                + report.count("thoughtsTokenCount", required=False)
            )
            usage = report.usage(prompt, output)
            if meta.get("thoughtsTokenCount"):
                self.metadata["reasoningTokens"] = meta["thoughtsTokenCount"]
        return self.answer(usage, dict(self.metadata))


def _further(fields: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """`generationConfig` entries of the further fields the table maps."""
    config: dict[str, Any] = {}
    if "top_k" in fields:
        config["topK"] = whole_number("top_k", fields["top_k"], 0)
    for name, key in (("frequency_penalty", "frequencyPenalty"), ("presence_penalty", "presencePenalty")):
        if name in fields:
            config[key] = number_field(name, fields[name], -2, 2)
    if "reasoning_effort" in fields:
        effort = fields["reasoning_effort"]
        if effort not in THINKING_BUDGETS:
            raise InvalidRequestError(
                "reasoning_effort", f"the gemini wire maps low, medium or high, got {effort!r:.40}"
            )
        config["thinkingConfig"] = {"thinkingBudget": THINKING_BUDGETS[effort]}
    if "thinking" in fields:  # Anthropic's: the thoughts come back (as `thinking` blocks)
        budget = thinking_budget("gemini", fields["thinking"], max_tokens)
        config["thinkingConfig"] = {"thinkingBudget": budget, "includeThoughts": True}
    return config


def _logprobs(result: Any) -> list[dict[str, Any]]:
    """`logprobsResult` in OpenAI's token shape: the chosen token of each step and its top candidates."""
    if not isinstance(result, Mapping):
        return []
    chosen = result.get("chosenCandidates") or []
    tops = result.get("topCandidates") or []
    out = []
    for i, token in enumerate(chosen):
        if not isinstance(token, Mapping):
            continue
        top = (
            (tops[i] or {}).get("candidates") or [] if i < len(tops) and isinstance(tops[i], Mapping) else []
        )
        out.append(
            {
                **logprob_entry(token.get("token", ""), token.get("logProbability"), None),
                "top_logprobs": [
                    logprob_entry(t.get("token", ""), t.get("logProbability"), None)
                    for t in top
                    if isinstance(t, Mapping)
                ],
            }
        )
    return out


def _contents(request: ChatRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # call id → tool name: Gemini matches a result to its call by name
    for m in results_with_images_after(request.turns()):
        if m.role == "tool":
            split = split_id(m.tool_call_id or "")
            result: dict[str, Any] = {
                "name": m.name or names.get(m.tool_call_id or "") or split.id or "tool",
                "response": _tool_result(m.content),
            }
            if split.gemini_id:
                result["id"] = split.id
            part = {"functionResponse": result}
            if out and out[-1]["role"] == "user" and all("functionResponse" in p for p in out[-1]["parts"]):
                out[-1]["parts"].append(part)
            else:
                out.append({"role": "user", "parts": [part]})
        elif m.role == "assistant":
            parts: list[dict[str, Any]] = [{"text": m.content}] if m.content else []
            names.update((c.id, c.name) for c in m.tool_calls)
            parts += [_function_call(c, first=i == 0) for i, c in enumerate(m.tool_calls)]
            out.append({"role": "model", "parts": parts or [{"text": ""}]})
        else:
            out.append({"role": "user", "parts": _parts(m) if m.parts else [{"text": m.content}]})
    return out


def _function_call(call: ToolCall, *, first: bool) -> dict[str, Any]:
    """A model turn's call as Gemini sent it: its own id and thought signature back, read from the id
    the client echoed (`signatures.py`). The turn's first call without one (history from another
    model, an id a client shortened) gets Google's documented stand-in, so a Gemini 3 model accepts
    the turn instead of answering 400; the later calls of a parallel turn carry none, as Gemini's own."""
    split = split_id(call.id)
    body: dict[str, Any] = {"name": call.name, "args": call.parsed_arguments()}
    if split.gemini_id:
        body["id"] = split.id
    part: dict[str, Any] = {"functionCall": body}
    signature = split.signature or (SKIP_VALIDATOR if first else None)
    if signature:
        part["thoughtSignature"] = signature
    return part


def _parts(message: ChatMessage) -> list[dict[str, Any]]:
    """A message with images (or PDFs) as Gemini's parts, in order: `inlineData` for data (`inline_data` in
    Google's REST examples; either spelling is read), `fileData` for an https URL Gemini fetches
    itself (https://ai.google.dev/gemini-api/docs/file-input-methods), its MIME type told by the
    URL's extension (`ImagePart.url_type`: the gateway never fetches an image)."""
    checked(message.images, "gemini")
    out: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, str):
            if part:  # Gemini refuses an empty text part
                out.append({"text": part})
        elif part.url:
            out.append({"fileData": {"mimeType": part.url_type("gemini"), "fileUri": part.url}})
        else:
            out.append({"inlineData": {"mimeType": part.media_type, "data": part.data}})
    return out


def _tool_result(content: str) -> dict[str, Any]:
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        return {"content": content}
    return value if isinstance(value, dict) else {"content": value}


ADAPTER = GeminiAdapter()

"""OpenAI's Responses API request (`POST /v1/responses`), read at the edge and mapped per wire.

Every field is forwarded, mapped or refused with a 400 naming it — never dropped
(https://platform.openai.com/docs/api-reference/responses/create):

| field | native (OpenAI wire serving `/responses`) | bridged (chat completions, anthropic, gemini, ollama) |
|---|---|---|
| `model` | the resolved wire name | the resolved wire name |
| `input` (text, messages, `function_call`, `function_call_output`) | as sent | chat messages, tool calls and tool results |
| `input` reasoning items | as sent | omitted: no bridge takes a model's earlier reasoning back |
| `input_image` parts of user messages (`image_url`: a base64 data URL of PNG, JPEG, GIF or WebP, or an http(s) URL; `detail`) | as sent | the message's image parts, in order with its text (`ImagePart`): each wire's own form, or a 400 naming `input[i].content[j].image_url` or `….detail` where the wire cannot take it (a URL on Ollama, `detail` but `auto` off the OpenAI wire) or the URL is malformed |
| `input_image` with a `file_id` | as sent | 400 naming `input[i].content[j].file_id` |
| `input_file` parts (user messages, `function_call_output`s): `file_data` a base64 data URL of a PDF, or `file_url`; `filename` | as sent | a PDF part: OpenAI chat's `file` part (data only), Anthropic's `document` block (`filename` its title), Gemini's `inlineData`/`fileData`; 400 naming `….file_data`/`….file_url` on Ollama, for another file type or a malformed one, `….file_id` for an uploaded file |
| `input_image` parts of a `function_call_output`'s `output` | as sent | the tool result's image parts: Anthropic's `tool_result` takes them; OpenAI chat, Gemini and Ollama get them in one user message right after the results (each result's led by a line naming its call); refused as above where the wire cannot take one |
| other `input` items and parts (`item_reference`, images or files on other roles, …) | as sent | 400 naming `input[i]…` |
| `instructions` | as sent | the system message |
| `tools` function tools, `strict` | as sent | tools; `strict` per wire (`llm/adapters/options.py`) |
| built-in tools (`web_search`, `file_search`, `computer_use_preview`, …) | as sent | 400 naming `tools[i]` and the tool |
| `tool_choice` auto/none/required/function | as sent | `tool_choice` |
| `parallel_tool_calls` | as sent | `parallel_tool_calls` per wire |
| `text.format` text/json_object/json_schema (`strict`) | as sent | JSON mode / schema per wire |
| `text.verbosity`, `reasoning`, `include`, `truncation: auto`, `max_tool_calls`, `top_logprobs`, `service_tier`, `prompt_cache_key`, `safety_identifier`, `prompt` | as sent | 400 naming the field |
| `max_output_tokens` | the budget's reservation (default 1024, capped by `max_tokens_per_call`) | `max_tokens`, the same |
| `temperature`, `top_p`, `user` | as sent | `temperature`, `top_p`, `user` per wire |
| `metadata` | as sent | kept on the gateway's response object (and its stored copy) |
| `store`, `previous_response_id` | the gateway's own store; upstream `store: false`, the history expanded into `input` | the same |
| `stream`, `stream_options` | the gateway's event stream | the same (the gateway adds no obfuscation) |
| `background`, `conversation` | 400: the gateway keeps no upstream state | 400 |
| any other field | as sent | 400 naming it |
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...contract.errors import InvalidRequestError
from ...llm.adapters import ChatMessage, ChatRequest, NativeBody, ToolSpec
from ...llm.adapters.fields import RESPONSES, bridge_refusals
from ...llm.adapters.openai_responses import API
from ...llm.adapters.options import SamplingOptions
from ...llm.adapters.response import ToolCall
from .openai_wire import DEFAULT_MAX_TOKENS
from .responses_content import UNKNOWN, read_content

Item = dict[str, Any]

NEVER = ("background", "conversation")
"""Fields that need the upstream to keep state: the gateway sends `store: false`, so refused everywhere."""


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FunctionTool(_Wire):
    """A function tool of the Responses API (flat: no `function` wrapper, unlike Chat Completions)."""

    type: str = "function"
    name: str = Field(min_length=1, max_length=200)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class TextFormat(_Wire):
    type: str = "text"
    name: str | None = Field(default=None, max_length=64)
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    description: str | None = None
    strict: bool | None = None


class TextConfig(_Wire):
    format: TextFormat | None = None
    verbosity: str | None = None


class ReasoningConfig(BaseModel):
    model_config = ConfigDict(extra="allow")
    effort: str | None = None
    summary: str | None = None


class ResponsesRequest(BaseModel):
    """`POST /v1/responses`: the fields the gateway reads; any other is kept (`model_extra`) to be
    forwarded natively or refused on a bridge."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=500, description="Anything the alias resolver takes.")
    input: str | list[dict[str, Any]] = Field(default_factory=list, max_length=10_000)
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = Field(default=None, max_length=512)
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    text: TextConfig | None = None
    reasoning: ReasoningConfig | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    metadata: dict[str, str] | None = Field(default=None, max_length=16)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    user: str | None = Field(default=None, max_length=200)
    store: bool | None = None
    previous_response_id: str | None = Field(default=None, max_length=200)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    truncation: str | None = None

    def input_items(self) -> list[Item]:
        """`input` as items: a text is one user message."""
        if isinstance(self.input, str):
            return [{"type": "message", "role": "user", "content": self.input}]
        return [dict(item) for item in self.input]


def to_chat_request(
    body: ResponsesRequest, raw: Mapping[str, Any], items: Sequence[Item], *, history: bool
) -> ChatRequest:
    """The chat form of the request (what bridged wires send, and what the budgets estimate), with
    the body as the client wrote it for wires that serve `/responses` (`items`: the input with any
    stored history in front of it)."""
    for name in NEVER:
        if raw.get(name) not in (None, False):
            raise InvalidRequestError(name, "the gateway keeps no upstream state: not supported")
    refused: list[tuple[str, str]] = []
    messages = _messages(body.instructions, items, refused)
    if not any(m.role != "system" for m in messages):
        raise InvalidRequestError("input", "expected a text or at least one input item")
    tools = _tools(body.tools or [], refused)
    tool_choice = _tool_choice(body.tool_choice, refused)
    fmt = body.text.format if body.text and body.text.format else None
    if fmt is not None and fmt.type not in ("text", "json_object", "json_schema"):
        raise InvalidRequestError("text.format.type", "expected text, json_object or json_schema")
    if fmt is not None and fmt.type == "json_schema" and fmt.schema_ is None:
        raise InvalidRequestError("text.format.schema", "a json_schema format needs its schema")
    _refuse_unbridged(raw, refused)
    native_body = {k: v for k, v in raw.items() if k not in ("previous_response_id", "store")}
    if history:
        native_body["input"] = list(items)
    return ChatRequest(
        tuple(messages),
        max_tokens=body.max_output_tokens or DEFAULT_MAX_TOKENS,
        temperature=body.temperature,
        tools=tools,
        tool_choice=tool_choice,
        json_output=bool(fmt and fmt.type == "json_object"),
        json_schema=fmt.schema_ if fmt and fmt.type == "json_schema" else None,
        options=SamplingOptions(
            parallel_tool_calls=body.parallel_tool_calls,
            top_p=body.top_p,
            user=body.user,
            schema_name=(fmt.name if fmt and fmt.name else "answer"),
            schema_strict=fmt.strict if fmt else None,
            schema_description=fmt.description if fmt else None,
        ),
        native=NativeBody(API, native_body, tuple(refused)),
    )


def _refuse_unbridged(raw: Mapping[str, Any], refused: list[tuple[str, str]]) -> None:
    """The fields no bridge carries, by the one field table (`fields.py`, (responses × bridged)):
    top-level, and the parts of `text` and `reasoning` one by one."""
    fields = dict(raw)
    for name in ("text", "reasoning"):
        part = raw.get(name)
        if isinstance(part, Mapping):
            fields.update({f"{name}.{key}": value for key, value in part.items()})
    refused += bridge_refusals(RESPONSES, fields, UNKNOWN)


def _messages(
    instructions: str | None, items: Sequence[Item], refused: list[tuple[str, str]]
) -> list[ChatMessage]:
    messages = [ChatMessage("system", instructions)] if instructions else []
    names: dict[str, str] = {}
    for i, item in enumerate(items):
        where = f"input[{i}]"
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "system", "developer", "assistant"):
                raise InvalidRequestError(f"{where}.role", "expected user, system, developer or assistant")
            parts = read_content(item.get("content"), f"{where}.content", refused, images=role == "user")
            messages.append(ChatMessage.of_parts("assistant" if role == "assistant" else _role(role), parts))
        elif kind == "function_call":
            call = ToolCall(
                _required(item, "call_id", where), _required(item, "name", where), _arguments(item)
            )
            names[call.id] = call.name
            last = messages[-1] if messages else None
            if last is not None and last.role == "assistant":  # parallel calls: one assistant turn
                messages[-1] = ChatMessage("assistant", last.content, tool_calls=(*last.tool_calls, call))
            else:
                messages.append(ChatMessage("assistant", "", tool_calls=(call,)))
        elif kind == "function_call_output":
            call_id = _required(item, "call_id", where)
            output = read_content(item.get("output"), f"{where}.output", refused, images=True)
            messages.append(
                ChatMessage.of_parts("tool", output, tool_call_id=call_id, name=names.get(call_id))
            )
        elif kind == "reasoning":
            continue  # a bridge takes no earlier reasoning: the model reasons afresh (table above)
        else:
            refused.append((f"{where}.type", f"input items of type {kind!r} have no bridged equivalent"))
    return messages


def _role(role: str) -> Any:
    return "user" if role == "user" else "system"


def _required(item: Mapping[str, Any], name: str, where: str) -> str:
    value = item.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidRequestError(f"{where}.{name}", "expected a non-empty string")
    return value


def _arguments(item: Mapping[str, Any]) -> str:
    value = item.get("arguments", "{}")
    if not isinstance(value, str):
        raise InvalidRequestError("input[].arguments", "expected the arguments as a JSON string")
    return value


def _tools(tools: Sequence[Mapping[str, Any]], refused: list[tuple[str, str]]) -> tuple[ToolSpec, ...]:
    specs = []
    for i, tool in enumerate(tools):
        kind = tool.get("type")
        if kind != "function":
            refused.append((f"tools[{i}]", f"the built-in tool {kind!r} cannot run on a bridged wire"))
            continue
        try:
            parsed = FunctionTool.model_validate(tool)
        except Exception as exc:
            raise InvalidRequestError(f"tools[{i}]", f"expected a function tool ({exc})") from None
        parameters = parsed.parameters or {"type": "object", "properties": {}}
        specs.append(ToolSpec(parsed.name, parsed.description or "", parameters, parsed.strict))
    return tuple(specs)


def _tool_choice(choice: str | Mapping[str, Any] | None, refused: list[tuple[str, str]]) -> str | None:
    if choice is None or isinstance(choice, str):
        if choice not in (None, "auto", "none", "required"):
            raise InvalidRequestError("tool_choice", "expected auto, none, required or a function")
        return choice
    if choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return str(choice["name"])
    refused.append(("tool_choice", f"a tool choice of type {choice.get('type')!r} has no bridged equivalent"))
    return None


class ResponsesUsage(BaseModel):
    input_tokens: int
    input_tokens_details: dict[str, int]
    output_tokens: int
    output_tokens_details: dict[str, int]
    total_tokens: int


class ResponsesAnswer(BaseModel):
    """The `response` object the route answers (the OpenAPI document's; `responses_answer.py` builds it)."""

    id: str
    object: str = "response"
    created_at: int
    status: str = Field(description="completed, incomplete, failed or (in the stream) in_progress")
    model: str = Field(description="What served, as `<instance>:<model>`.")
    output: list[dict[str, Any]] = Field(description="message, function_call and reasoning items")
    usage: ResponsesUsage | None = Field(description="What the call was settled with.")
    previous_response_id: str | None = None
    store: bool
    metadata: dict[str, str] = Field(default_factory=dict)
    error: dict[str, Any] | None = None
    zarniwoop: dict[str, Any] | None = Field(
        default=None, description="What served, whose key, what it cost."
    )


class ResponsesDeleted(BaseModel):
    """`DELETE /v1/responses/{response_id}`'s answer, OpenAI's shape."""

    id: str
    object: str = "response.deleted"
    deleted: bool = True


def request_schemas() -> dict[str, Any]:
    """`ResponsesRequest` and its parts as OpenAPI components (`$ref`s to `#/components/schemas/…`)."""
    from .openai_wire import COMPONENT_REF

    schema = ResponsesRequest.model_json_schema(ref_template=COMPONENT_REF + "{model}")
    defs = schema.pop("$defs", {})
    parts = {
        name: model.model_json_schema(ref_template=COMPONENT_REF + "{model}")
        for name, model in (
            ("ResponsesFunctionTool", FunctionTool),
            ("ResponsesAnswer", ResponsesAnswer),
            ("ResponsesDeleted", ResponsesDeleted),
        )
    }
    parts.update(parts["ResponsesAnswer"].pop("$defs", {}))
    return {"ResponsesRequest": schema, **defs, **parts}


__all__ = ["ResponsesRequest", "request_schemas", "to_chat_request"]

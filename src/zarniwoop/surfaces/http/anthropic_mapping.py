"""The Messages API's messages, tools and tool choice in the chat form (`ChatMessage`, `ToolSpec`),
for every wire but Anthropic's: the mapping table is `anthropic_wire.py`'s docstring.

What the chat form cannot carry is not raised here but collected (`MessagesMapping.refused`), for a
bridged wire to refuse by name (`NativeBody.refused`): an Anthropic-wire instance is sent the
client's body as written, so nothing in it may fail the call before the wire is chosen — a malformed
image source included, which Anthropic itself judges on the native path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...contract.errors import InvalidRequestError
from ...llm.adapters import ChatMessage, ToolSpec
from ...llm.adapters.images import IMAGE_TOKENS, PDF, ImagePart
from ...llm.adapters.response import ToolCall

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .anthropic_wire import AnthropicMessage, AnthropicTextBlock, AnthropicTool, AnthropicToolChoice

NO_BRIDGE = "no other wire has an equivalent: remove it, or choose a model served over the Anthropic wire"
"""Why a field the mapping cannot carry is refused off Anthropic (`NativeBody.refused`)."""
KNOWN_KEYS = {
    "text": {"type", "text", "cache_control"},
    "image": {"type", "source", "cache_control"},
    "document": {"type", "source", "title", "context", "citations", "cache_control"},
    "tool_use": {"type", "id", "name", "input", "cache_control"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
}
"""The keys of each content block the mapping carries; any other (`citations`, …) is refused off Anthropic."""
SOURCE_KEYS = {"base64": {"type", "media_type", "data"}, "url": {"type", "url"}}
"""The image sources the chat form carries, and their keys: a `file` source (the Files API) is
Anthropic's own."""
DOCUMENT_SOURCES = {
    "base64": {"type", "media_type", "data"},
    "url": {"type", "url"},
    "text": {"type", "media_type", "data"},
    "content": {"type", "content"},
}
"""The document sources the chat form carries: a PDF (base64 or by URL), plain text, content blocks."""


class MessagesMapping:
    """One request's mapping: the messages, and what could not be carried."""

    def __init__(self) -> None:
        self.refused: list[tuple[str, str]] = []
        """`(field, reason)` pairs a bridged wire refuses, in the order met."""
        self.extra_tokens = 0
        self.tool_names: dict[str, str] = {}
        """tool_use id → tool name (Gemini and Ollama match results by name)."""

    def cannot(self, *names: str, reason: str = NO_BRIDGE) -> None:
        self.refused += [(name, reason) for name in names]

    def extra(self, where: str, model: BaseModel) -> None:
        """Fields of a part that the model does not name: forwarded natively, refused elsewhere."""
        self.cannot(*(f"{where}.{key}" for key in model.model_extra or ()))

    def system(self, system: str | list[AnthropicTextBlock] | None) -> list[ChatMessage]:
        if not system:
            return []
        if isinstance(system, str):
            return [ChatMessage("system", system)]
        for i, block in enumerate(system):
            self.extra(f"system[{i}]", block)
        return [ChatMessage("system", "\n\n".join(b.text for b in system))]

    def message(self, i: int, message: AnthropicMessage) -> list[ChatMessage]:
        self.extra(f"messages[{i}]", message)
        if isinstance(message.content, str):
            return [ChatMessage(message.role, message.content)]
        parts: list[str | ImagePart] = []
        calls: list[ToolCall] = []
        results: list[ChatMessage] = []
        for j, block in enumerate(message.content):
            where = f"messages[{i}].content[{j}]"
            kind = block.get("type")
            known = KNOWN_KEYS.get(str(kind), set(block))
            self.cannot(*(f"{where}.{key}" for key in block if key not in known))
            if kind == "text":
                parts.append(str(block.get("text") or ""))
            elif kind == "image" and message.role == "user":
                parts += self._image(block.get("source"), f"{where}.source")
            elif kind == "document" and message.role == "user":
                parts += self._document(block, where)
            elif kind == "tool_use" and message.role == "assistant":
                call_id, name = str(block.get("id") or f"toolu_{i}_{j}"), str(block.get("name") or "")
                self.tool_names[call_id] = name
                calls.append(ToolCall.create(call_id, name, _object(block.get("input"), where + ".input")))
            elif kind == "tool_result" and message.role == "user":
                results.append(self._result(block, where))
            elif kind in ("thinking", "redacted_thinking") and message.role == "assistant":
                self.extra_tokens += len(str(block.get("thinking") or block.get("data") or "")) // 4
            else:  # a document, an image off a user turn, a server tool's block, …
                self._uncarried(f"{where}.type")
        turn = ChatMessage.of_parts(message.role, parts, tool_calls=tuple(calls))
        if message.role == "assistant":
            return [turn] if turn.content or calls else []
        return results + ([turn] if turn.content or turn.parts or not results else [])

    def _image(self, source: Any, where: str) -> list[ImagePart]:
        """An `image` block's `source` (at `where`) as the chat form's image; none when it cannot be
        carried, refused naming its field (and held at `IMAGE_TOKENS`, as the native path holds it)."""
        if not isinstance(source, Mapping):
            return self._uncarried(
                where, "expected an object: {type: base64, media_type, data} or {type: url, url}"
            )
        kind = source.get("type")
        keys = SOURCE_KEYS.get(str(kind))
        if keys is None:
            return self._uncarried(
                f"{where}.type",
                f"a {str(kind)[:40]!r} image source has no equivalent off Anthropic: send base64 or url",
            )
        self.cannot(*(f"{where}.{key}" for key in source if key not in keys))
        try:
            if kind == "url":
                return [ImagePart.http(str(source.get("url") or ""), where, f"{where}.url")]
            return [
                ImagePart.base64(str(source.get("media_type") or ""), str(source.get("data") or ""), where)
            ]
        except InvalidRequestError as exc:  # refused off Anthropic; the native path sends it as written
            return self._uncarried(exc.field, exc.reason)

    def _document(self, block: Mapping[str, Any], where: str) -> Sequence[str | ImagePart]:
        """A `document` block (at `where`) as chat parts: its `title` and `context` as text lines
        before it, then a PDF (base64 or by URL) as a document part, plain text as text, content
        blocks as their text and images; what cannot be carried is refused naming its field —
        `citations` asked for (no other wire cites a document's passages), a `file` source."""
        self.cannot(*(f"{where}.{key}" for key in block if key not in KNOWN_KEYS["document"]))
        citations = block.get("citations")
        if isinstance(citations, Mapping) and citations.get("enabled"):
            self.cannot(f"{where}.citations")
        title, context = block.get("title"), block.get("context")
        lines = [f"{line}\n" for line in (title, context) if isinstance(line, str) and line]
        source, at = block.get("source"), f"{where}.source"
        kind = source.get("type") if isinstance(source, Mapping) else None
        keys = DOCUMENT_SOURCES.get(str(kind))
        if not isinstance(source, Mapping) or keys is None:
            return self._uncarried(f"{at}.type", "expected a base64 or url PDF, text, or content source")
        self.cannot(*(f"{at}.{key}" for key in source if key not in keys))
        name = title if isinstance(title, str) else ""
        try:
            if kind == "text":
                return [*lines, str(source.get("data") or "")]
            if kind == "content":  # text and image blocks (a string: its text)
                content = source.get("content")
                if isinstance(content, list):
                    return [*lines, *self._content_blocks(content, f"{at}.content", documents=False)]
                return [*lines, str(content or "")]
            if kind == "url":
                return [
                    *lines,
                    ImagePart.pdf_at(str(source.get("url") or ""), at, f"{at}.url", filename=name),
                ]
            if source.get("media_type") != PDF:
                return self._uncarried(f"{at}.media_type", "expected application/pdf")
            return [*lines, ImagePart.pdf(str(source.get("data") or ""), at, filename=name)]
        except InvalidRequestError as exc:  # refused off Anthropic; the native path sends it as written
            return self._uncarried(exc.field, exc.reason)

    def _content_blocks(
        self, blocks: list[Any], where: str, *, documents: bool = True
    ) -> list[str | ImagePart]:
        """Text, image and (`documents`) document blocks — a tool result's, a `content` document's —
        as chat parts in order; any other block refused naming `<where>[k].type`."""
        parts: list[str | ImagePart] = []
        for k, block in enumerate(blocks):
            at = f"{where}[{k}]"
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind == "text":
                parts.append(str(block.get("text") or ""))
            elif kind == "image":
                parts += self._image(block.get("source"), f"{at}.source")
            elif kind == "document" and documents:
                parts += self._document(block, at)
            else:  # a search result, …: the chat form has no equivalent
                self._uncarried(f"{at}.type")
        return parts

    def _uncarried(self, field: str, reason: str = NO_BRIDGE) -> list[ImagePart]:
        """A block the chat form does not take (an image, a document, …): refused off Anthropic naming
        `field`, held at `IMAGE_TOKENS` as the native path sends it."""
        self.cannot(field, reason=reason)
        self.extra_tokens += IMAGE_TOKENS
        return []

    def _result(self, block: Mapping[str, Any], where: str) -> ChatMessage:
        """A `tool_result` block as a tool message: its text and images in order (a screenshot a
        tool read; each wire carries them its way, `results_with_images_after`)."""
        content = block.get("content")
        parts: list[str | ImagePart] = []
        if isinstance(content, list):
            parts = self._content_blocks(content, f"{where}.content")
        elif content is not None:
            parts.append(str(content))
        if block.get("is_error"):
            parts.insert(0, "Error: ")
        call_id = str(block.get("tool_use_id") or "")
        return ChatMessage.of_parts("tool", parts, tool_call_id=call_id, name=self.tool_names.get(call_id))

    def tool(self, i: int, tool: AnthropicTool) -> ToolSpec:
        if tool.type not in (None, "custom"):
            self.cannot(f"tools[{i}].type")
        else:
            self.extra(f"tools[{i}]", tool)
        schema = tool.input_schema or {"type": "object", "properties": {}}
        return ToolSpec(tool.name, tool.description or "", schema, tool.strict)

    def tool_choice(self, choice: AnthropicToolChoice | None) -> tuple[str | None, bool | None]:
        if choice is None:
            return None, None
        self.extra("tool_choice", choice)
        parallel = False if choice.disable_parallel_tool_use else None
        if choice.type == "tool":
            if not choice.name:
                raise InvalidRequestError("tool_choice.name", "required when tool_choice.type is 'tool'")
            return choice.name, parallel
        return {"auto": "auto", "any": "required", "none": "none"}[choice.type], parallel


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidRequestError(where, "expected an object")
    return value


__all__ = ["KNOWN_KEYS", "NO_BRIDGE", "MessagesMapping"]

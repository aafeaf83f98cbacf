"""OpenAI's chat messages as the gateway reads them (`openai_wire.ChatCompletionRequest.messages`):
roles, tool calls, and content — a string, or parts.

| content part | the chat form (`ChatMessage`) |
|---|---|
| `text` | the message's text, in order with its images |
| `image_url` on a user message (`url`: a base64 data URL of PNG, JPEG, GIF or WebP, or an http(s) URL; `detail`) | an `ImagePart` (`llm/adapters/images.py`), written by each wire in its own form or refused naming `messages[i].content[j].image_url…` |
| `image_url` on another role; `input_audio`, `file`, any other part | 400 naming `messages[i].content[j].type` |

The gateway never fetches an image URL: it goes to the upstream as the client sent it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ...contract.errors import InvalidRequestError
from ...llm.adapters import ChatMessage
from ...llm.adapters.images import ImagePart
from ...llm.adapters.response import ToolCall
from ...llm.adapters.signatures import MAX_TOOL_CALL_ID


class Wire(BaseModel):
    """What OpenAI's request models share: a field the gateway does not read is ignored here (the
    request's own further fields are kept, `ChatCompletionRequest.model_extra`)."""

    model_config = ConfigDict(extra="ignore")


class ImageUrl(Wire):
    url: str = Field(description="A base64 data URL (`data:image/png;base64,…`) or an http(s) URL.")
    detail: str | None = Field(default=None, description="`auto`, `low` or `high`.")


class ContentPart(Wire):
    type: str
    text: str | None = None
    image_url: ImageUrl | None = None


class FunctionCall(Wire):
    name: str = Field(max_length=200)
    arguments: str = "{}"


class MessageToolCall(Wire):
    id: str = Field(max_length=MAX_TOOL_CALL_ID)
    """Up to 16 KiB, not 200: a Gemini call's id carries its thought signature (`llm/adapters/signatures.py`)."""
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(Wire):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[MessageToolCall] | None = None
    tool_call_id: str | None = Field(default=None, max_length=MAX_TOOL_CALL_ID)  # the call's id, echoed

    def parts(self, i: int) -> list[str | ImagePart]:
        """The text and image parts in order (`ChatMessage.of_parts`); a 400 naming the first part
        the chat form cannot carry. `i`: the message's index."""
        if self.content is None or isinstance(self.content, str):
            return [self.content or ""]
        parts: list[str | ImagePart] = []
        for j, part in enumerate(self.content):
            where = f"messages[{i}].content[{j}]"
            if part.type == "text":
                parts.append(part.text or "")
            elif part.type == "image_url" and self.role == "user":
                if part.image_url is None:
                    raise InvalidRequestError(f"{where}.image_url", "required on an image_url part")
                image = part.image_url
                parts.append(ImagePart.read(image.url, image.detail, f"{where}.image_url"))
            else:
                raise InvalidRequestError(
                    f"{where}.type",
                    f"only text parts, and image_url parts on user messages, are supported; "
                    f"got a {part.type[:40]!r} part on a {self.role} message",
                )
        return parts


def chat_message(i: int, message: Message) -> ChatMessage:
    """The chat form of the request's `i`-th message (`developer` counts as `system`)."""
    role = "system" if message.role == "developer" else message.role
    calls = tuple(ToolCall(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or ())
    return ChatMessage.of_parts(
        role,
        message.parts(i),
        tool_calls=calls,
        tool_call_id=message.tool_call_id,
        name=message.name,
    )


__all__ = ["ContentPart", "ImageUrl", "Message", "Wire", "chat_message"]

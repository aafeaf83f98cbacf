"""A tool result's images (and PDFs) on the wires whose tool results are text (OpenAI's chat,
Gemini, Ollama): they follow the results in a user message. Anthropic's `tool_result` takes them itself.

A tool that read a screenshot (Claude Code's Read tool, an agent's browser) answers with an image; the
Messages and Responses APIs carry it inside the result (`ChatMessage.parts` of a tool message), but
OpenAI's tool messages are text, and its next turn after tool results may be nothing but more of
them. So each run of results keeps its text, and their images follow the run in one user message,
each result's led by a line naming the tool and the call, so the model can tell whose they are; a
user message right after the run takes them before its own parts.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import ChatMessage
from .images import ImagePart

ATTACHED_TO_RESULT = "What the {name} call {call_id} returned:"
"""Leads each result's images (or PDFs) in the user message that carries them."""
ATTACHED_FOLLOW = "(attached: in the next message)"
"""A tool result's text where it had nothing but images (or PDFs)."""


def results_with_images_after(messages: Sequence[ChatMessage]) -> Sequence[ChatMessage]:
    """`messages` as a wire whose tool results are text takes them (see the module); `messages`
    itself where no result has an image."""
    if not any(m.parts for m in messages if m.role == "tool"):
        return messages
    out: list[ChatMessage] = []
    shown: list[str | ImagePart] = []
    for m in messages:
        if m.role == "tool":
            if m.parts:
                label = ATTACHED_TO_RESULT.format(name=m.name or "tool", call_id=m.tool_call_id or "")
                shown += ["\n" + label if shown else label, *m.images]  # a line each, where joined
                m = ChatMessage(
                    "tool", m.content or ATTACHED_FOLLOW, tool_call_id=m.tool_call_id, name=m.name
                )
            out.append(m)
            continue
        if shown and m.role == "user":  # the user's next words: one turn with the images before them
            m = ChatMessage.of_parts("user", [*shown, *(m.parts or (m.content,))])
        elif shown:
            out.append(ChatMessage.of_parts("user", shown))
        shown = []
        out.append(m)
    if shown:
        out.append(ChatMessage.of_parts("user", shown))
    return out


__all__ = ["ATTACHED_FOLLOW", "ATTACHED_TO_RESULT", "results_with_images_after"]

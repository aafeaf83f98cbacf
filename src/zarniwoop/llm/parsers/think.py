"""Think-tag stripping for reasoning models (seed 002 §4.1, the strip stage of the sanitizer).

Reasoning models served over plain chat wires (DeepSeek-R1 on Ollama or Groq, QwQ, Qwen3, …) put
their monologue inline: `<think>…</think>` then the answer. The strip stage moves every think block
into `reasoning` and leaves the answer in `text`; tool calls are never touched. Three shapes occur:

- `<think>…</think>answer` — the common one (Groq `reasoning_format: raw`, Ollama CLI; the block may
  be empty: `<think>\\n\\n</think>\\n\\nHello!`).
- `…</think>answer` without an opening tag — llama.cpp chat templates put `<think>` into the prompt,
  so the output starts inside the block and only the closing tag arrives.
- `<think>…` without a closing tag — the answer was cut off (max tokens) while still thinking:
  everything after the tag is reasoning and the answer is empty.
"""

from __future__ import annotations

from ..adapters.response import ChatResponse

OPEN = "<think>"
CLOSE = "</think>"


def split_think(text: str) -> tuple[str, str | None] | None:
    """`(answer, reasoning or None)`, or None when the text carries no think tag at all."""
    if OPEN not in text and CLOSE not in text:
        return None
    parts: list[str] = []
    first_close, first_open = text.find(CLOSE), text.find(OPEN)
    if first_close != -1 and (first_open == -1 or first_close < first_open):
        parts.append(text[:first_close])
        text = text[first_close + len(CLOSE) :]
    kept: list[str] = []
    while True:
        start = text.find(OPEN)
        if start == -1:
            kept.append(text)
            break
        kept.append(text[:start])
        end = text.find(CLOSE, start + len(OPEN))
        if end == -1:
            parts.append(text[start + len(OPEN) :])
            break
        parts.append(text[start + len(OPEN) : end])
        text = text[end + len(CLOSE) :]
    reasoning = "\n\n".join(p.strip() for p in parts if p.strip()) or None
    return "".join(kept).strip(), reasoning


def strip_think_tags(response: ChatResponse) -> ChatResponse:
    """The response with think blocks moved from `text` into `reasoning`; unchanged when there are none."""
    split = split_think(response.text)
    if split is None:
        return response
    answer, reasoning = split
    if response.reasoning and reasoning:
        reasoning = f"{response.reasoning}\n\n{reasoning}"
    return response.with_changes(text=answer, reasoning=reasoning or response.reasoning)

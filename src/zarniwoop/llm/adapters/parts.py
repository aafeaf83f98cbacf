"""What a stream of answer parts gathered so far, for the wires whose stream repeats the answer's
shape piece by piece (Gemini's candidates, Ollama's lines): text, reasoning and tool calls in
order, the finish reason, the model and OpenAI-shaped log-probabilities. Each wire's accumulator
reads its own payloads into one of these and adds its usage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from .base import StreamDelta
from .options import LOGPROBS, openai_logprobs
from .response import ChatResponse

if TYPE_CHECKING:
    from .response import TokenUsage, ToolCall


class PartsStream:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[ToolCall] = []
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.logprobs: list[dict[str, Any]] = []

    def took(self, kind: Literal["text", "reasoning"], piece: str) -> StreamDelta:
        """`piece` of the answer's text or reasoning, kept and passed on."""
        (self.text if kind == "text" else self.reasoning).append(piece)
        return StreamDelta(kind, piece)

    def called(self, tool: ToolCall) -> StreamDelta:
        """A complete tool call, kept and passed on."""
        self.calls.append(tool)
        return StreamDelta("tool_call", tool_call=tool)

    def answer(self, usage: TokenUsage | None, metadata: dict[str, Any]) -> ChatResponse:
        """The answer the parts make, with the wire's `usage` and `metadata` (and the log-probabilities)."""
        if self.logprobs:
            metadata = {**metadata, LOGPROBS: openai_logprobs(self.logprobs)}
        return ChatResponse(
            text="".join(self.text),
            tool_calls=tuple(self.calls),
            reasoning="".join(self.reasoning) or None,
            finish_reason=self.finish_reason,
            model=self.model,
            usage=usage,
            metadata=metadata,
        )


def logprob_entry(token: Any, logprob: Any, raw_bytes: Any) -> dict[str, Any]:
    """A token and its log-probability as OpenAI's logprobs write one (`bytes` as the wire gave them)."""
    return {"token": str(token), "logprob": float(logprob or 0.0), "bytes": raw_bytes}

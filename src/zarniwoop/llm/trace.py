"""Persisting raw LLM traces (the seed's LlmTraceRecorder), when `ai.trace.persist` is true.

The tracing layer of the decorator chain hands every raw response (before sanitizing) to a sink;
this one keeps the pairs of one call in memory and writes them to `llm_traces` once the call's
usage record exists, so a trace points at its usage row. What is written is the request as the
model saw it (messages, tool names, limits) and the raw answer — never the endpoint's headers,
so never a key; as a second line of defence the call's key is scrubbed from both texts anyway.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..storage.db import Database
    from .adapters.response import ChatResponse

PERSIST_KEY = "ai.trace.persist"


def request_json(request: Any) -> dict[str, Any]:
    messages = [
        {
            "role": m.role,
            "content": m.content,
            **({"toolCalls": [c.name for c in m.tool_calls]} if m.tool_calls else {}),
            # an image as its URL or its type, never its data (a screenshot is megabytes)
            **({"images": [i.url or i.media_type for i in m.images]} if m.parts else {}),
        }
        for m in getattr(request, "messages", ())
    ]
    return {
        "messages": messages,
        "tools": [t.name for t in getattr(request, "tools", ())],
        "maxTokens": getattr(request, "max_tokens", None),
        "json": bool(getattr(request, "wants_json", False)),
        "stream": bool(getattr(request, "stream", False)),
    }


def response_json(response: ChatResponse) -> dict[str, Any]:
    return {
        "text": response.text,
        "toolCalls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls],
        "reasoning": response.reasoning,
        "finishReason": response.finish_reason,
        "model": response.model,
        "usage": None
        if response.usage is None
        else {"input": response.usage.input, "output": response.usage.output},
        "metadata": {k: v for k, v in response.metadata.items() if isinstance(v, (str, int, float, bool))},
    }


@dataclass
class TraceBuffer:
    """A `TraceSink` for one call: collects raw responses; `flush` writes them."""

    secrets_to_scrub: tuple[str, ...] = ()
    items: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)

    def record(self, request: Any, response: ChatResponse) -> None:
        self.items.append((request_json(request), response_json(response)))

    async def flush(
        self,
        db: Database,
        *,
        usage_id: str,
        tenant: str,
        project: str | None,
        provider: str,
        instance: str,
        model: str,
    ) -> int:
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        for request, response in self.items:
            await db.execute(
                "INSERT INTO llm_traces (id, usage_id, tenant, project, provider, instance, model, status, request, "
                "response, error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    "trace_" + secrets.token_hex(8),
                    usage_id,
                    tenant,
                    project,
                    provider,
                    instance,
                    model,
                    200,
                    self._scrub(json.dumps(request, ensure_ascii=False)),
                    self._scrub(json.dumps(response, ensure_ascii=False)),
                    None,
                    now,
                ),
            )
        count = len(self.items)
        self.items.clear()
        return count

    def _scrub(self, text: str) -> str:
        for secret in self.secrets_to_scrub:
            if secret and len(secret) >= 6:
                text = text.replace(secret, "***")
        return text

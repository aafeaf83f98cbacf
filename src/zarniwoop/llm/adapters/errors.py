"""Reading the wires' error bodies; the status → error mapping itself is `transport/status.py`'s.

What the failover does with each class (`llm/failover.py`):

    429                              → RateLimitedError(retry_after)   retry after the hint, then fail over
    529, 503, `overloaded_error`     → ProviderOverloadedError         retry with backoff, then fail over
    401, 403                         → AuthError                       no retry: the next provider
    other 4xx                        → ProviderHTTPError(status)       no retry: the next provider
    5xx                              → ProviderHTTPError(status)       retry with backoff

This module supplies what only a body tells: the provider's error type (`overloaded_error`), its
words, and a retry hint for when `Retry-After` is absent — Gemini's `google.rpc.RetryInfo.retryDelay`
("34.4s"), OpenAI's "Please try again in 174ms / 3.89s". The message names the instance, the status
and the provider's own words, trimmed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ...contract.errors import ParseError, ProviderError
from ...transport.status import error_for_status

_TRY_AGAIN = re.compile(r"try again in (\d+(?:\.\d+)?)\s*(ms|s)\b", re.IGNORECASE)
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)s$")
MAX_MESSAGE = 300


def provider_message(body: bytes) -> tuple[str | None, str | None, dict[str, Any]]:
    """`(error type/status, message, parsed body)` from any wire's error envelope."""
    try:
        data = json.loads(body.decode("utf-8", "replace") or "null")
    except json.JSONDecodeError:
        text = body.decode("utf-8", "replace").strip()
        return None, text[:MAX_MESSAGE] or None, {}
    if not isinstance(data, dict):
        return None, None, {}
    error = data.get("error")
    if isinstance(error, str):  # Ollama: {"error": "..."}
        return None, error, data
    if isinstance(error, dict):
        code = error.get("code")
        kind = error.get("type") or error.get("status") or (code if isinstance(code, str) else None)
        message = error.get("message")
        raw = (error.get("metadata") or {}).get("raw") if isinstance(error.get("metadata"), dict) else None
        if raw:  # OpenRouter: the upstream's own words
            message = f"{message}: {raw}" if message else raw
        return (str(kind) if kind is not None else None), (str(message) if message else None), data
    return None, None, data


def body_retry_hint(data: Mapping[str, Any], message: str | None) -> float | None:
    """A retry hint in the body, for answers without `Retry-After`."""
    error = data.get("error") if isinstance(data, Mapping) else None
    if isinstance(error, Mapping):
        for detail in error.get("details") or ():
            if isinstance(detail, Mapping) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
                match = _DURATION.match(str(detail.get("retryDelay", "")))
                if match:
                    return float(match.group(1))
    if message:
        match = _TRY_AGAIN.search(message)
        if match:
            value = float(match.group(1))
            return value / 1000 if match.group(2).lower() == "ms" else value
    return None


def map_error(status: int, headers: Mapping[str, str], body: bytes, instance: str) -> ProviderError:
    kind, message, data = provider_message(body)
    words = f"{kind}: {message}" if kind and message else (message or kind or "")
    text = f"{instance}: HTTP {status}" + (f" {words}" if words else "")
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 1] + "…"
    hint = body_retry_hint(data, message)
    return error_for_status(status, headers, text, kind=kind, body_retry_after=hint, instance_id=instance)


_STREAM_STATUS = {"overloaded_error": 529, "rate_limit_error": 429}
"""A mid-stream error has no status of its own; its type says which one it stands for."""


def stream_object(payload: Any, instance: str, what: str) -> dict[str, Any]:
    """A stream's parsed `payload` (`what`: a line, an element), which must be a JSON object; one
    carrying `error` is the failure that arrived after the 200, raised as `stream_error`."""
    if not isinstance(payload, dict):
        raise ParseError(f"{what} is not a JSON object")
    if "error" in payload:
        raise stream_error(payload, instance)
    return payload


def stream_error(payload: Mapping[str, Any], instance: str) -> ProviderError:
    """An error that arrives inside a 200 stream (Anthropic `event: error`, Ollama `{"error": …}`)."""
    error = payload.get("error")
    kind = error.get("type") if isinstance(error, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else error
    text = (
        f"{instance}: error mid-stream" + (f" {kind}:" if kind else "") + (f" {message}" if message else "")
    )
    status = _STREAM_STATUS.get(str(kind))
    if status is not None:
        return error_for_status(status, {}, text[:MAX_MESSAGE], kind=kind, instance_id=instance)
    return ProviderError(text[:MAX_MESSAGE], instance_id=instance)

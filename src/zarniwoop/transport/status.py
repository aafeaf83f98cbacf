"""HTTP statuses → the contract error tree: the one mapping for search and LLM traffic alike.

    429 (unless the body says "overloaded")   → RateLimitedError(retry_after)
    503, 529, body kind `overloaded_error`    → ProviderOverloadedError(retry_after)
    401, 403                                  → AuthError
    any other non-2xx                         → ProviderHTTPError(status)

503 is "overloaded", not a plain status: RFC 9110 §15.6.4 defines it as a temporary overload or
maintenance, optionally with `Retry-After`, which is what Anthropic's 529 says too. So the LLM
failover retries it honouring the hint before moving to the next provider, and the dispatcher,
for which it stays a `ProviderHTTPError`, benches it like every 5xx (DESIGN §5: 30 s doubling to
10 min; only a 429's `Retry-After` sets a cooldown's length).

The retry hint is `Retry-After` (seconds or an HTTP date), else what the caller read from the
body (Gemini's `retryDelay`, OpenAI's "try again in 3.89s"). Callers read bodies and word the
message; `raise_for_status` is the search side's wording, `llm/adapters/errors.py` the LLM side's.

    raise_for_status(raw, "serper-main", detail="Invalid API key")   # → AuthError
    error_for_status(503, {"Retry-After": "20"}, "HTTP 503")          # ProviderOverloadedError, 20 s
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..contract.clock import http_date
from ..contract.errors import (
    AuthError,
    ProviderError,
    ProviderHTTPError,
    ProviderOverloadedError,
    RateLimitedError,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..contract.protocol import RawResponse

OVERLOADED_STATUSES = frozenset({503, 529})
OVERLOADED_KIND = "overloaded_error"
"""Anthropic's error type for an overloaded API, whatever the status (a 429 included)."""
AUTH_STATUSES = frozenset({401, 403})


def error_for_status(
    status: int,
    headers: Mapping[str, str],
    message: str,
    *,
    kind: str | None = None,
    body_retry_after: float | None = None,
    instance_id: str | None = None,
) -> ProviderError:
    """The error for a non-2xx answer (the one place where statuses become error classes).

    Args:
        status: the HTTP status.
        headers: the answer's headers (`Retry-After` is looked up case-insensitively).
        message: the error's message, worded by the caller.
        kind: the provider's own error type from the body, if any (`overloaded_error`).
        body_retry_after: a retry hint the caller read from the body; `Retry-After` wins over it.
        instance_id: the endpoint or LLM instance that answered.
    """
    overloaded = status in OVERLOADED_STATUSES or kind == OVERLOADED_KIND
    if status == 429 and not overloaded:
        return RateLimitedError(_retry_after(headers, body_retry_after), message, instance_id=instance_id)
    if overloaded:
        return ProviderOverloadedError(
            status, message, retry_after=_retry_after(headers, body_retry_after), instance_id=instance_id
        )
    if status in AUTH_STATUSES:
        return AuthError(status, message, instance_id=instance_id)
    return ProviderHTTPError(status, message, instance_id=instance_id)


def raise_for_status(raw: RawResponse, instance_id: str | None = None, *, detail: str | None = None) -> None:
    """Raise the error for a non-2xx search answer; nothing for a 2xx.

    `detail` is the provider's own explanation, read from the error body by the protocol
    (`describe_error`); it is appended to the message so a user sees why, not only the status,
    and is the error's `echoed` text (the only part scrubbed of the query before it is persisted).
    """
    if not 200 <= raw.status < 300:
        error = error_for_status(
            raw.status, raw.headers, search_message(raw.status, detail), instance_id=instance_id
        )
        error.echoed = (detail,) if detail else ()
        raise error


def search_message(status: int, detail: str | None = None) -> str:
    """`HTTP 503: busy`, `HTTP 429 Too Many Requests`, `HTTP 401 (key missing, wrong or not allowed)`."""
    if status in AUTH_STATUSES:
        return f"HTTP {status} ({detail or 'key missing, wrong or not allowed'})"
    phrase = " Too Many Requests" if status == 429 else ""
    return f"HTTP {status}{phrase}" + (f": {detail}" if detail else "")


def _retry_after(headers: Mapping[str, str], fallback: float | None) -> float | None:
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    hint = parse_retry_after(value)
    return hint if hint is not None else fallback


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """`Retry-After` is either delta-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    when = http_date(value)
    if when is None:
        return None
    current = datetime.fromtimestamp(now if now is not None else time.time(), UTC)
    return max(0.0, (when - current).total_seconds())

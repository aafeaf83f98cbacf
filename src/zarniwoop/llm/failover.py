"""Multi-provider failover (seed 002 §8): retry one provider, then the next by priority, then local.

    Provider A (priority 1) → 429, wait Retry-After → retry → 529 → backoff → retry → 529
      → "failover from anthropic to gemini (HTTP 529 overloaded)"
      → Provider B (priority 2) → success

Per candidate, a transient failure — 429 (waits the provider's `Retry-After`), 529/503 overloaded,
another 5xx, a network error or a timeout — is retried up to `max_retries` times with exponential
backoff from `retry_delay_ms`. Anything else (401/403, another 4xx, an unparseable answer) moves
on at once: retrying would not help. A `Retry-After` longer than `max_wait` is not waited for;
the next provider is tried instead. Which failure is transient and how long to wait is the one
table search cooldowns read too, `limits/failure_policy.py`. Every switch is logged and returned, so the usage record can
name every provider the call touched.

A quota refusal on one candidate (`QuotaExceededError`) is final for every candidate that draws
on the same budgets: only candidates marked `unlimited` (the local free tier) are still tried; if
none is left, the quota error is what the caller sees (exit 4, naming the level).

Waits go through the injected `Clock`, so tests record them instead of waiting.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..contract.errors import (
    FailoverError,
    ProviderError,
    ProviderHTTPError,
    ProviderOverloadedError,
    ProviderTimeoutError,
    QuotaBlockedError,
    QuotaExceededError,
    RateLimitedError,
    TransportError,
)
from ..contract.protocol import Secret
from ..ledger.records import AttemptRecord, Switch  # what the usage record keeps of each attempt
from ..limits.clock import Clock
from ..limits.failure_policy import IN_CALL_WAIT_CAP, retry_wait
from ..tenancy.llm_config import FailoverPolicy

log = logging.getLogger("zarniwoop.llm.failover")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One way to run the call: a provider instance, a model, a key and where the key came from."""

    wire_type: str
    instance: str
    model: str
    base_url: str
    api_key: Secret | None
    credential_source: str
    """`account`, `project`, `team`, `tenant`, `operator` (environment) or `local` — never the key."""
    priority: int = 0
    unlimited: bool = False
    local: bool = False
    untrusted: bool = False
    """A tenant or project set the instance's `ai.provider.<instance>.baseUrl` (`config/trust.py`):
    no operator key goes there and its error bodies are summarised, never reflected."""
    guarded: bool = False
    """Its requests pass the SSRF guard: untrusted, and the operator did not set
    `research.allowPrivateEndpoints: true` at system level."""
    origin: str = "primary"
    """Why it is a candidate: `primary`, `fallbackModels` (the runtime chain), `priority` (another
    configured entry), `local`, or `substitute` (the requested provider had no key)."""

    @property
    def label(self) -> str:
        return f"{self.instance}:{self.model}"


@dataclass(frozen=True, slots=True)
class FailoverOutcome(Generic[T]):
    value: T
    candidate: Candidate
    attempts: tuple[AttemptRecord, ...]
    switches: tuple[Switch, ...]


def short_reason(error: BaseException) -> str:
    if isinstance(error, RateLimitedError):
        return "HTTP 429 rate limited"
    if isinstance(error, ProviderOverloadedError):
        return f"HTTP {error.status} overloaded"
    if isinstance(error, ProviderHTTPError):
        return f"HTTP {error.status}"
    if isinstance(error, QuotaExceededError):
        return f"{error.level} quota exhausted"
    if isinstance(error, ProviderTimeoutError):
        return "timeout"
    if isinstance(error, TransportError):
        return "network error"
    return type(error).__name__


def _tried(
    candidate: Candidate,
    outcome: str,
    error: str | None,
    status: int | None = None,
    started: float | None = None,
    waited: float = 0.0,
) -> AttemptRecord:
    """What the usage record keeps of one attempt on `candidate`: its outcome, the error, and how long
    it took since `started` (`time.perf_counter`) after `waited` seconds of retry delay."""
    elapsed = int((time.perf_counter() - started) * 1000) if started is not None else 0
    return AttemptRecord(
        candidate.instance, candidate.model, outcome, error, status, elapsed, int(waited * 1000)
    )


class FailoverEngine:
    def __init__(
        self,
        policy: FailoverPolicy,
        *,
        clock: Clock | None = None,
        max_wait: float = IN_CALL_WAIT_CAP,
    ) -> None:
        self.policy = policy
        self.clock = clock or Clock()
        self.max_wait = max_wait

    def delay(self, error: BaseException, retry: int) -> float | None:
        """Seconds to wait before retry number `retry` (1-based); None: do not retry this candidate."""
        if retry > self.policy.max_retries:
            return None
        return retry_wait(error, retry, self.policy.retry_delay_ms / 1000, self.max_wait)

    async def run(
        self, candidates: Sequence[Candidate], call: Callable[[Candidate], Awaitable[T]]
    ) -> FailoverOutcome[T]:
        attempts: list[AttemptRecord] = []
        switches: list[Switch] = []
        quota_error: QuotaExceededError | None = None
        previous: Candidate | None = None
        last_reason = ""
        for candidate in candidates:
            if quota_error is not None and not candidate.unlimited:
                continue
            if previous is not None:
                switch = Switch(
                    from_instance=previous.instance, to_instance=candidate.instance, reason=last_reason
                )
                switches.append(switch)
                log.warning(
                    "failover from %s to %s (%s)", switch.from_instance, switch.to_instance, switch.reason
                )
            previous = candidate
            retry, waited = 0, 0.0
            while True:
                started = time.perf_counter()
                try:
                    value = await call(candidate)
                except QuotaExceededError as exc:
                    attempts.append(_tried(candidate, "blocked", exc.message))
                    quota_error, last_reason = exc, short_reason(exc)
                    break
                except ProviderError as exc:
                    status = getattr(exc, "status", None)
                    attempts.append(_tried(candidate, "error", exc.message, status, started, waited))
                    last_reason = short_reason(exc)
                    retry += 1
                    wait = self.delay(exc, retry)
                    if wait is None:
                        break
                    log.info("retrying %s in %.2fs after %s", candidate.label, wait, last_reason)
                    waited = wait
                    await self.clock.sleep(wait)
                    continue
                attempts.append(_tried(candidate, "ok", None, None, started, waited))
                return FailoverOutcome(value, candidate, tuple(attempts), tuple(switches))
        if quota_error is not None:
            raise QuotaBlockedError(quota_error, tuple(attempts), tuple(switches))
        if not candidates:
            raise FailoverError("no LLM provider is configured for this call", (), ())
        # each instance's reason once, with how many tries it took (retries repeat the same one)
        tries: dict[str, int] = {}
        for a in attempts:
            if a.error:
                line = f"{a.instance}: {a.error}"
                tries[line] = tries.get(line, 0) + 1
        reasons = "; ".join(f"{line} ({n} tries)" if n > 1 else line for line, n in tries.items())
        raise FailoverError(f"every LLM provider failed: {reasons}", tuple(attempts), tuple(switches))

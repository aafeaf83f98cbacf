"""The one failure classification: which provider error is transient, and how long to wait.

Search cooldowns (`dispatch/cooldown.py`, and the Redis script of `dispatch/cooldown_redis.py`)
and LLM failover (`llm/failover.py`) read this table; nothing else decides it.

    kind           example                  LLM: retry the same provider?   search: bench it for
    rate_limited   429                      yes, after its Retry-After      Retry-After (≤ 1 h) else 60 s
    overloaded     503/529 "overloaded"     yes, after its hint or backoff  30 s doubling to 10 min
    server         another 5xx              yes, backoff                    30 s doubling to 10 min
    network        reset, refused, timeout  yes, backoff                    30 s doubling to 10 min
    unresolved     DNS lookup failed        no: it will not resolve later   30 s doubling to 10 min
    client         another 4xx              no                              30 s doubling to 10 min
    auth           401/403                  no                              30 min
    malformed      unreadable or oversized  no                              5 min
    provider       an error inside a 200    yes, backoff                    5 min
    fault          not a provider error     no                              5 min (a bug: as if malformed)

Why the columns differ: a search has a cascade of equivalent providers and a shared bench, so it
benches anything that failed hard and tries the next at once; an LLM call retries one provider a
few times within the caller's wait before it switches, and only a failure that may pass is worth
the wait.

The doubling is one formula, `Backoff.seconds`; the Redis cooldown script embeds its Lua form,
`Backoff.lua_seconds`, generated from the same constants (and tested against the Python one on a
real Redis over many inputs).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ..contract.errors import (
    AuthError,
    ParseError,
    ProviderError,
    ProviderHTTPError,
    ProviderOverloadedError,
    ProviderTimeoutError,
    RateLimitedError,
    ResponseTooLargeError,
    TransportError,
)

MAX_DOUBLINGS = 64
"""The exponent is clamped: 64 doublings take any base past any cap, and an unclamped `2 ** 1024`
overflows the float conversion, so a provider down for weeks (streak > 1024) was never benched
again (in Lua it became `inf`, and `0 * inf` a NaN deadline)."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """`base` seconds for the first failure, doubling per consecutive failure up to `cap`
    (`cap == base`: a fixed length). Plain numbers, so a Redis script can apply it atomically."""

    base: float
    cap: float

    def seconds(self, streak: int) -> float:
        """The wait after the `streak`-th consecutive failure (1-based)."""
        doublings = min(max(0, streak - 1), MAX_DOUBLINGS)
        return min(self.base * 2.0**doublings, self.cap)

    @staticmethod
    def lua_seconds(base: str, cap: str, streak: str) -> str:
        """`seconds` as a Lua expression over three Lua variable names (the Redis cooldown script)."""
        return f"math.min({base} * 2 ^ math.min(math.max(0, {streak} - 1), {MAX_DOUBLINGS}), {cap})"


class Failure(StrEnum):
    RATE_LIMITED = "rate_limited"
    OVERLOADED = "overloaded"
    SERVER = "server"
    NETWORK = "network"
    UNRESOLVED = "unresolved"
    CLIENT = "client"
    AUTH = "auth"
    MALFORMED = "malformed"
    PROVIDER = "provider"
    FAULT = "fault"


@dataclass(frozen=True, slots=True)
class FailureRule:
    """One row of `FAILURES`, what one kind of failure means to each reader. `retry`: an LLM call
    retries the same provider (within `ai.failover.maxRetries`) before it switches; `bench`: how
    long a search benches the provider for the modality (DESIGN §5); `bench_reads_hint`: the bench
    is the provider's `Retry-After` when it sent one (capped by `COOLDOWN_HINT_CAP`)."""

    retry: bool
    bench: Backoff
    bench_reads_hint: bool = False


RATE_LIMIT_BENCH = 60.0
"""A 429 without `Retry-After`."""
TRANSIENT_BENCH = Backoff(30.0, 600.0)
AUTH_BENCH = Backoff(1800.0, 1800.0)
MALFORMED_BENCH = Backoff(300.0, 300.0)

FAILURES: dict[Failure, FailureRule] = {
    Failure.RATE_LIMITED: FailureRule(
        True, Backoff(RATE_LIMIT_BENCH, RATE_LIMIT_BENCH), bench_reads_hint=True
    ),
    # an overloaded search provider is a 5xx like any other: its hint is not a bench length
    Failure.OVERLOADED: FailureRule(True, TRANSIENT_BENCH),
    Failure.SERVER: FailureRule(True, TRANSIENT_BENCH),
    Failure.NETWORK: FailureRule(True, TRANSIENT_BENCH),
    # a name that does not resolve now will not resolve a backoff later (offline, or a typo in a
    # base URL): retrying only delays the switch to the next provider, or the failure
    Failure.UNRESOLVED: FailureRule(False, TRANSIENT_BENCH),
    Failure.CLIENT: FailureRule(False, TRANSIENT_BENCH),
    Failure.AUTH: FailureRule(False, AUTH_BENCH),
    Failure.MALFORMED: FailureRule(False, MALFORMED_BENCH),
    # a failure inside a 200 stream (Ollama's {"error": …}) is the provider's, and passes
    Failure.PROVIDER: FailureRule(True, MALFORMED_BENCH),
    Failure.FAULT: FailureRule(False, MALFORMED_BENCH),
}

# The two Retry-After caps are two uses, deliberately different:
COOLDOWN_HINT_CAP = 3600.0
"""A search bench follows a 429's `Retry-After` up to an hour (DESIGN §5): the bench costs no caller
any time (the cascade moves on at once), and an hour bounds what one bad header can switch off."""
IN_CALL_WAIT_CAP = 60.0
"""An LLM call waits a `Retry-After` only up to a minute (the default of `ai.failover.maxWaitSeconds`):
the caller is waiting, and past that another provider answers sooner. A longer hint is not
shortened: the call switches providers at once."""
RETRY_BACKOFF_CAP = 30.0
"""An LLM retry's own backoff (no hint) doubles from `ai.failover.retryDelayMs` up to 30 s."""


def classify(error: BaseException) -> Failure:
    """The kind of a failure; the table above says what each kind means to whom."""
    if isinstance(error, RateLimitedError):
        return Failure.RATE_LIMITED
    if isinstance(error, AuthError):
        return Failure.AUTH
    if isinstance(error, ProviderOverloadedError):
        return Failure.OVERLOADED
    if isinstance(error, ProviderHTTPError):
        return Failure.SERVER if error.status >= 500 else Failure.CLIENT
    if isinstance(error, TransportError):
        return Failure.UNRESOLVED if error.cause == "dns" else Failure.NETWORK
    if isinstance(error, (ProviderTimeoutError, TimeoutError)):
        return Failure.NETWORK
    if isinstance(error, (ParseError, ResponseTooLargeError)):
        return Failure.MALFORMED
    if type(error) is ProviderError:
        return Failure.PROVIDER
    return Failure.FAULT


def hint(error: BaseException) -> float | None:
    """The provider's own wait (`Retry-After`, or a body's retry hint) in seconds, never negative."""
    seconds = getattr(error, "retry_after", None) if isinstance(error, ProviderHTTPError) else None
    return None if seconds is None else max(0.0, float(seconds))


def is_transient(error: BaseException) -> bool:
    """Whether retrying the same provider may help (LLM failover)."""
    return FAILURES[classify(error)].retry


def bench(error: BaseException) -> Backoff:
    """How a failure benches a search provider (DESIGN §5)."""
    rule = FAILURES[classify(error)]
    wait = hint(error) if rule.bench_reads_hint else None
    if wait is not None:
        wait = min(wait, COOLDOWN_HINT_CAP)
        return Backoff(wait, wait)
    return rule.bench


def retry_wait(error: BaseException, retry: int, first_delay: float, max_wait: float) -> float | None:
    """Seconds an LLM call waits before retry number `retry` (1-based) of the same provider, or None
    when retrying would not help or the provider's hint is longer than `max_wait`."""
    if not is_transient(error):
        return None
    wait = hint(error)
    if wait is None:
        return Backoff(first_delay, RETRY_BACKOFF_CAP).seconds(retry)
    return wait if wait <= max_wait else None

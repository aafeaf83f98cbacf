"""The one exception tree of Zarniwoop.

    ZarniwoopError
    ├── InvalidRequestError(field, reason)      bad input from a caller           → exit 2 / HTTP 422
    │   ├── TargetRefusedError(url)             content URL/redirect to a non-public address
    │   ├── UnsafeValueError                    a value for an upstream URL breaks the vendor's rules → HTTP 422
    │   ├── UnknownNameError                    a well-formed name of nothing defined (a profile) → HTTP 404
    │   ├── UnknownKeyError                     a strict write of an unknown key or endpoint id
    │   └── ScopeRequiredError                  an empty or blank tenant/project
    ├── ConfigError(key, reason)                bad configuration                  → exit 2
    │   └── UnknownModelError(spec, reason)     a model spec resolves to nothing   → exit 2
    ├── DocumentError  (also a ValueError)      a model catalog document breaks the schema
    │   └── BadPathError                        its path breaks the naming rules
    ├── ProviderError(instance_id)              one provider call failed hard      → cooldown
    │   ├── TransportError                      network error, refused, reset
    │   ├── ProviderTimeoutError                no answer within the timeout
    │   ├── ProviderHTTPError(status)           any non-2xx status
    │   │   ├── RateLimitedError(retry_after)   429
    │   │   ├── AuthError                       401 / 403
    │   │   └── ProviderOverloadedError         503 / 529 / "overloaded": retry later
    │   ├── ResponseTooLargeError               body over the size cap
    │   └── ParseError                          body not what the protocol expects
    ├── QuotaExceededError(level)               a budget is exhausted              → exit 4
    │   ├── RateLimitExceededError(retry_after) a per-minute limit of a level      → exit 4 / HTTP 429
    │   ├── BudgetUnavailableError              a token budget's store is unreachable (fail closed)
    │   └── QuotaBlockedError(attempts, switches)  …and no local LLM was left to take the call
    ├── AccessDeniedError                       token/scope not allowed            → exit 5 / HTTP 401/403
    │   └── RevokedTokenError                   a remembered API token found revoked → HTTP 401
    ├── OAuthTokenError(error, status)          an OAuth access token refused      → HTTP 401/403/503
    ├── NoProviderAvailableError(attempts)      every candidate failed             → exit 3
    │   ├── FailoverError(switches)             every LLM candidate failed
    │   └── MissingCredentialError(provider)    no key for the asked-for provider  → exit 4
    ├── DatabaseUnavailableError                the database cannot be reached right now
    ├── IndexFormatError                        a local index file of another schema, or not SQLite
    └── ExtractionError(reason)                 a document to index cannot be read as its type
        └── MissingLibraryError                 its type needs an optional library (pypdf)

Statuses become classes in one function, `transport/status.py error_for_status`; aiohttp's
exceptions become `TransportError`/`ProviderTimeoutError` at one boundary,
`transport/errors.py translate_errors`.

Every error keeps its context in plain attributes and survives pickling (`__reduce__`),
so it can cross a process boundary (workers, multiprocessing tests) unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ZarniwoopError(Exception):
    """Base class of every error Zarniwoop raises on purpose."""

    exit_code: int = 1
    echoed: tuple[str, ...] | None = None
    """The parts of `message` that came from outside (an upstream body's words, a header, a URL it
    sent): the only text scrubbed of the query before it is persisted (`storage/privacy.py`).
    `()`: all of it is the project's own wording; None: not known, so all of it counts as outside."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.__dict__))


def _rebuild(cls: type[ZarniwoopError], state: dict[str, Any]) -> ZarniwoopError:
    err = cls.__new__(cls)
    Exception.__init__(err, state.get("message", ""))
    err.__dict__.update(state)
    return err


class InvalidRequestError(ZarniwoopError):
    """A caller's input is wrong; names the field and what was expected."""

    exit_code = 2

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class ScopeRequiredError(InvalidRequestError):
    """A call named an empty or blank project (or tenant): provider instances, cooldowns and quotas
    are per `(tenant, project)`, so research tools refuse to run without one (seed 000 §3).

    `needs` names what asked for the scope, so each route says its own ("settings require a
    project scope", "credentials require a tenant scope"); the seed's wording is the default."""

    def __init__(self, field: str = "project", needs: str = "research tools") -> None:
        super().__init__(field, f"{needs} require a {field} scope")
        self.needs = needs

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.field, self.needs))


class UnknownKeyError(InvalidRequestError):
    """A strict settings write (`--strict`, the console) named a key no documentation knows, or a
    key of an endpoint the writer's scope does not define (`config/writes.py`)."""


class TargetRefusedError(InvalidRequestError):
    """The content store refused a URL — or a redirect — whose host is private, loopback, link-local
    or otherwise not a public address (SSRF guard; `research.content.allowPrivate` lifts it)."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__("url", f"{url} refused: {reason}")
        self.url = url


class UnsafeValueError(InvalidRequestError):
    """A value that would reach an upstream URL or request (a model id, a deployment name) is outside
    what the vendor admits: refused before any request is built (`llm/adapters/ids.py`)."""


class UnknownNameError(InvalidRequestError):
    """A well-formed name that names nothing defined in this scope (an agent profile): the request is
    valid, the thing it points at is missing (HTTP 404, like an unknown credential)."""


class ConfigError(ZarniwoopError):
    """The configuration is wrong; names the key (or file) and the reason — and, for a file with more
    than one bad value, each of the others on a line of its own (`more`), the first few of them."""

    exit_code = 2
    MORE_LISTED = 4

    def __init__(self, key: str, reason: str, *, more: Sequence[tuple[str, str]] = ()) -> None:
        lines = [f"config error: {key}: {reason}"]
        lines += [f"  also {other}: {why}" for other, why in more[: self.MORE_LISTED]]
        if len(more) > self.MORE_LISTED:
            lines.append(f"  and {len(more) - self.MORE_LISTED} more")
        super().__init__("\n".join(lines))
        self.key = key
        self.reason = reason
        self.more = tuple(more)


class UnknownModelError(ConfigError):
    """A model spec (`default:chat`, `openai:gpt-4o`, a comma cascade) resolves to nothing.

    `spec` is the spec as given, `reason` says why (no provider, instance or alias of that name;
    an alias cycle; the depth limit; no `ai.default.provider`/`ai.default.model`); `code` is one of
    `not_configured`, `no_default`, `bad_default`, `cycle`, `too_deep`, `malformed`, `unknown_type`.
    """

    def __init__(self, spec: str, reason: str, code: str = "not_configured") -> None:
        super().__init__(spec, reason)
        self.spec = spec
        self.code = code
        self.message = f"cannot resolve model spec {spec!r}: {reason}"
        self.args = (self.message,)


class DocumentError(ZarniwoopError, ValueError):
    """A model catalog document breaks the schema; the message names the field and what was expected.

    Also a `ValueError`, as it was before it joined the tree, so validators that expect one still work."""


class BadPathError(DocumentError):
    """A catalog document path that breaks the naming rules; the message says which part and why."""


class ProviderError(ZarniwoopError):
    """A provider call failed hard; the dispatcher turns it into a cooldown.

    `cause` names the kind of failure in one word, for the summary of a search every provider
    failed (`dispatch/failures.py`): `dns`, `proxy`, `refused`, `tls`, `reset`, `unreachable`,
    `closed`, `network`, `timeout`, `http`, `overloaded`, `rate_limited`, `auth`, `too_large`,
    `malformed`, or `provider` (anything else)."""

    cause: str = "provider"

    def __init__(self, message: str, *, instance_id: str | None = None) -> None:
        super().__init__(message)
        self.instance_id = instance_id


class TransportError(ProviderError):
    """Connection refused, reset, DNS failure, redirect to another host.

    Worded by the transport from the request's own host and port, never from an exception's text
    (`echoed` is `()`); a redirect's refusal names the hosts the upstream sent in `echoed`."""

    echoed: tuple[str, ...] | None = ()
    cause: str = "network"
    """Set by the transport to what the connection died of (`dns`, `proxy`, `refused`, …)."""


class ProviderTimeoutError(ProviderError):
    """No complete answer within the endpoint timeout or the call deadline."""

    echoed: tuple[str, ...] | None = ()
    cause: str = "timeout"


class ProviderHTTPError(ProviderError):
    """The provider answered with a non-2xx status."""

    cause: str = "http"

    def __init__(self, status: int, message: str | None = None, *, instance_id: str | None = None) -> None:
        super().__init__(message or f"HTTP {status}", instance_id=instance_id)
        self.status = status


class RateLimitedError(ProviderHTTPError):
    """HTTP 429; `retry_after` is the provider's `Retry-After` in seconds, if it sent one."""

    cause: str = "rate_limited"

    def __init__(
        self, retry_after: float | None = None, message: str | None = None, *, instance_id: str | None = None
    ) -> None:
        super().__init__(429, message or "HTTP 429", instance_id=instance_id)
        self.retry_after = retry_after


class AuthError(ProviderHTTPError):
    """HTTP 401/403: the key is missing, wrong or not allowed."""

    cause: str = "auth"


class ProviderOverloadedError(ProviderHTTPError):
    """The provider is overloaded (Anthropic's 529 `overloaded_error`, a 503): retry later, then fail over.

    `retry_after` is the provider's hint in seconds, if it sent one (a 529 usually does not)."""

    cause: str = "overloaded"

    def __init__(
        self,
        status: int = 529,
        message: str | None = None,
        *,
        retry_after: float | None = None,
        instance_id: str | None = None,
    ) -> None:
        super().__init__(status, message or f"HTTP {status} overloaded", instance_id=instance_id)
        self.retry_after = retry_after


class ResponseTooLargeError(ProviderError):
    """The body exceeded the transport's size cap; reading stopped there."""

    cause: str = "too_large"


class ParseError(ProviderError):
    """The body could not be parsed as the protocol's wire format."""

    cause: str = "malformed"


class QuotaExceededError(ZarniwoopError):
    """A budget is exhausted; `level` names which one (endpoint, project, tenant, …)."""

    exit_code = 4

    def __init__(self, level: str, message: str | None = None) -> None:
        super().__init__(message or f"{level} quota exhausted")
        self.level = level


class RateLimitExceededError(QuotaExceededError):
    """A level's `requests_per_minute` or `tokens_per_minute` is used up; `retry_after` is how many
    seconds until the window lets this call in (a gateway answers 429 with `Retry-After`)."""

    def __init__(self, level: str, retry_after: float, message: str | None = None) -> None:
        super().__init__(level, message or f"{level} rate limit reached; retry in {retry_after:.1f}s")
        self.retry_after = retry_after


class QuotaBlockedError(QuotaExceededError):
    """An LLM budget refused the call and no unlimited (local) candidate was left.

    `attempts` and `switches` are the failover's records (`llm/failover.py` `AttemptRecord`, `Switch`);
    `retry_after` is set when a per-minute rate limit (not a budget) refused: seconds until there is room."""

    def __init__(
        self, cause: QuotaExceededError, attempts: tuple[Any, ...] = (), switches: tuple[Any, ...] = ()
    ) -> None:
        super().__init__(cause.level, cause.message)
        self.attempts = attempts
        self.switches = switches
        self.retry_after: float | None = getattr(cause, "retry_after", None)


class BudgetUnavailableError(QuotaExceededError):
    """The store of a token budget (Redis, the database) cannot be reached, so the call cannot be
    held against it: token budgets fail closed (docs/robustness.md). Like an exhausted budget, it
    leaves only the unlimited (local) candidates; exit 4."""


class AccessDeniedError(ZarniwoopError):
    """The caller may not do this (missing/invalid token, other project's resource)."""

    exit_code = 5


class RevokedTokenError(AccessDeniedError):
    """An API token this process remembered (`TokenStore.recall`) was revoked since: found by the
    check that travels with a gateway call's reservation, before its first upstream byte; HTTP 401."""

    def __init__(self, message: str = "invalid or revoked token") -> None:
        super().__init__(message)


class OAuthTokenError(ZarniwoopError):
    """An OAuth access token refused (`tenancy/oauth.py`): `error` is RFC 6750's code, `status` the
    HTTP answer (401, 403 for a scope too low, 503 when the issuer's keys cannot be fetched)."""

    exit_code = 5

    def __init__(self, message: str, *, error: str = "invalid_token", status: int = 401) -> None:
        super().__init__(message)
        self.error = error
        self.status = status


class NoProviderAvailableError(ZarniwoopError):
    """Every candidate failed or was skipped; `attempts` says why for each."""

    exit_code = 3

    def __init__(self, message: str, attempts: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self.attempts = attempts


class FailoverError(NoProviderAvailableError):
    """Every LLM candidate failed; carries the attempts and the provider switches for the usage record."""

    def __init__(self, message: str, attempts: tuple[Any, ...] = (), switches: tuple[Any, ...] = ()) -> None:
        super().__init__(message, attempts)
        self.switches = switches


class MissingCredentialError(NoProviderAvailableError):
    """The requested model's provider has no key at any level; nothing else is called in its place
    unless the tenant allows substitution (`ai.substitute: true`).

    `provider` is the provider instance, `spec` the model spec asked for, `searched` every place
    looked in, in order (`account mike`, …, `operator environment ANTHROPIC_API_KEY`)."""

    exit_code = 4

    def __init__(self, provider: str, spec: str, searched: tuple[str, ...]) -> None:
        super().__init__(
            f"no key for provider {provider!r} (model spec {spec!r}); searched: {', '.join(searched)}. "
            "Store one (zarniwoop credentials set) or set ai.substitute: true to let another provider serve",
            (),
        )
        self.provider = provider
        self.spec = spec
        self.searched = searched


class DatabaseUnavailableError(ZarniwoopError):
    """The database cannot be reached right now (refused, reset, timed out). Callers on the search
    path catch it: searches keep working on what is in memory, audit records stay spooled."""


class IndexFormatError(ZarniwoopError):
    """The file is not a local index of this version (another schema, or not SQLite at all)."""


class ExtractionError(ZarniwoopError):
    """A file cannot be read as its type; `reason` is shown in the index report."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MissingLibraryError(ExtractionError):
    """The file type needs an optional library that is not installed: the file is skipped."""

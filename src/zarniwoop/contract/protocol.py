"""The protocol SPI: how a wire format plugs into Zarniwoop.

A protocol is pure: `build_request()` turns a `SearchRequest` into a `RequestSpec`, and
`parse_response()` turns a `RawResponse` into a `SearchPage`. It never opens a socket, so
every protocol is testable with a recorded body alone. Two-step APIs (PubMed esearch →
esummary) stay pure too: the page of step one carries the `RequestSpec` of step two.

A protocol that needs more than one HTTP exchange per page, or no HTTP at all (the local
index), may define `instantiate(config, transport)` and return its own `ProviderInstance`.

Add-on packages register a protocol object in the entry-point group `zarniwoop.protocols`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .enums import MODALITY_DOMAINS, Availability, Modality, SearchDomain, Tier

if TYPE_CHECKING:
    from .query import SearchRequest, SearchScope
    from .results import ContentRef, QuotaStatus, SearchHit, SearchResult


class Secret:
    """A credential that never shows itself in `repr`, `str`, logs or tracebacks."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True, slots=True)
class InstanceConfig:
    """One endpoint as resolved from `research.endpoint.<id>.*` settings for a scope."""

    instance_id: str
    protocol_id: str
    base_url: str | None = None
    api_key: Secret | None = None
    key_source: str | None = None
    """Where the key came from: `setting`, `env:SERPER_API_KEY`, … (never the key)."""
    enabled: bool = True
    timeout_ms: int = 8000
    rate_per_second: float | None = None
    hedge: bool = False
    extras: Mapping[str, str] = field(default_factory=dict)
    """Every other suffix (`contactEmail`, `language`, `quota.daily`, …) as a string."""
    home: Path | None = None
    """The runtime's data folder (ZARNIWOOP_HOME), for instances that keep files per scope (the
    local index); None when the factory was built without one."""

    def extra(self, name: str, default: str | None = None) -> str | None:
        return self.extras.get(name, default)


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """One HTTP exchange, fully described; the transport sends it."""

    method: str
    url: str
    params: tuple[tuple[str, str], ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    json_body: Any = None
    step: str = "search"
    """Which step of a multi-step flow this is; `parse_response` dispatches on it."""
    state: Mapping[str, Any] = field(default_factory=dict)
    """Data a later step needs from an earlier one (PubMed ids, say)."""


@dataclass(frozen=True, slots=True)
class RawResponse:
    status: int
    headers: Mapping[str, str]
    body: bytes
    url: str = ""
    elapsed_ms: float = 0.0

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        for key, value in self.headers.items():
            if key.lower() == lowered:
                return value
        return None


@dataclass(frozen=True, slots=True)
class SearchPage:
    """What a protocol parsed out of one response."""

    hits: tuple[SearchHit, ...] = ()
    total: int | None = None
    note: str | None = None
    error_message: str | None = None
    """A soft failure the provider reported in a 2xx body: no cooldown, the cascade moves on."""
    next_request: RequestSpec | None = None
    """Set by step one of a multi-step flow; the instance sends it and parses again."""
    quota: QuotaStatus | None = None


@runtime_checkable
class SearchProtocol(Protocol):
    """A wire format. Satisfied by shape; built-ins and add-ons do not inherit from anything."""

    id: str
    display_name: str
    modalities: frozenset[Modality]
    tiers: frozenset[Tier]
    prompt_hint: str
    key_required: bool
    """True when no search can succeed without a key (→ `skipped_no_key`)."""

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec: ...

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        """Parse a 2xx body; raise `ParseError` on a body that is not the expected format."""
        ...

    # Optional, looked up with getattr (not part of the structural check):
    #   validate_config(config) -> None          raise ConfigError at boot (SearXNG without baseUrl)
    #   describe_error(raw) -> str | None        the provider's explanation in a non-2xx body, put
    #                                            into the error message ("JSON output is not enabled")
    #   env_key: str                             the operator environment variable holding a key
    #   soft_error_statuses: frozenset[int]      non-2xx statuses whose body `parse_response` reads
    #                                            (arXiv 400 error feed → a soft error, no cooldown)
    #   rejects_key(raw) -> bool                 a non-2xx answer that means "wrong key" although its
    #                                            status is not 401/403 (NCBI 400) → AuthError
    #   default_rate_with_key: float             pace when a key resolves (PubMed 10/s instead of 3/s)
    #   load_content(ref, config) -> RequestSpec the call that fetches a STASH_ON_DEMAND reference
    #   content_text(body) -> str                that call's body as text, for the content store
    #   instance_language(config) -> str | None  the language an instance serves (locale routing)
    #   domains: frozenset[SearchDomain]         the subjects its index covers (`protocol_domains`)
    #   known_extras: frozenset[str]             the endpoint suffixes it reads beyond COMMON_EXTRAS;
    #                                            any other suffix is warned about at start-up


@runtime_checkable
class ProviderInstance(Protocol):
    """A configured endpoint, ready to search (the seed's `SearchProviderInstance`)."""

    @property
    def id(self) -> str: ...

    @property
    def protocol(self) -> SearchProtocol: ...

    @property
    def config(self) -> InstanceConfig: ...

    def availability(self, scope: SearchScope) -> Availability: ...

    async def search(self, request: SearchRequest, scope: SearchScope, *, timeout: float) -> SearchResult: ...

    async def load_content(self, ref: ContentRef, scope: SearchScope) -> bytes: ...

    def status_text(self, scope: SearchScope) -> str | None: ...

    async def dispose(self) -> None: ...


COMMON_EXTRAS: frozenset[str] = frozenset({"userAgent", "language", "quota.daily", "quota.monthly"})
"""Endpoint extras every protocol honours: `userAgent` replaces Zarniwoop's User-Agent on the wire
(Nominatim and Wikipedia ask for an identifying one), `language` routes locales, `quota.*` budgets."""


def protocol_domains(protocol: SearchProtocol) -> frozenset[SearchDomain]:
    """The protocol's declared `domains`, else one per modality it serves (ACADEMIC → ACADEMIC, …)."""
    declared = getattr(protocol, "domains", None)
    if declared:
        return frozenset(SearchDomain.parse(d, field=f"{protocol.id}.domains") for d in declared)
    return frozenset(MODALITY_DOMAINS[m] for m in protocol.modalities)


def instance_domains(instance: ProviderInstance) -> frozenset[SearchDomain]:
    """The seed's `SearchProviderInstance.domains()`: the instance's own answer when it has a
    `domains()` method (an add-on whose index depends on its config), else its protocol's."""
    method = getattr(instance, "domains", None)
    if callable(method):
        return frozenset(method())
    return protocol_domains(instance.protocol)


def known_extras(protocol: SearchProtocol) -> frozenset[str]:
    """Every endpoint extra the protocol reads: the common ones and its own `known_extras`."""
    return COMMON_EXTRAS | frozenset(getattr(protocol, "known_extras", ()))


__all__ = [
    "COMMON_EXTRAS",
    "InstanceConfig",
    "ProviderInstance",
    "RawResponse",
    "RequestSpec",
    "SearchPage",
    "SearchProtocol",
    "Secret",
    "instance_domains",
    "known_extras",
    "protocol_domains",
]

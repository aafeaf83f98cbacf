"""The protocol SPI: how a wire format plugs into Zarniwoop.

A protocol is pure: `build_request()` turns a `SearchRequest` into a `RequestSpec`, and
`parse_response()` turns a `RawResponse` into a `SearchPage`. It never opens a socket, so
every protocol is testable with a recorded body alone. Two-step APIs (PubMed esearch →
esummary) stay pure too: the page of step one carries the `RequestSpec` of step two.

A protocol that needs more than one HTTP exchange per page, or no HTTP at all (the local
index), defines `instantiate(config, transport)` instead and returns its own `ProviderInstance`.
Optional hooks are typed `Protocol`s too (`ValidatesConfig`, `DescribesErrors`, …), so mypy sees
them and the factory can check each protocol once; they live in `contract/capabilities.py` and are
importable from here as well.

Add-on packages register a protocol object in the entry-point group `zarniwoop.protocols`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .capabilities import (
    CarriesHtml,
    ContributesSettingForm,
    CoversDomains,
    DeclinesProbes,
    DescribesErrors,
    ExtractsContentText,
    FasterWithKey,
    HasOperatorKey,
    HonoursFilters,
    InstantiatesItself,
    LoadsContent,
    PacedByDefault,
    ProbesCheaply,
    ReadsErrorStatuses,
    ReadsExtras,
    RejectsKeys,
    ReportsThrottles,
    ServesLanguage,
    ServesTiers,
    ValidatesConfig,
)
from .enums import MODALITY_DOMAINS, Availability, Modality, SearchDomain, Tier
from .replacing import slot_init

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
    operator_funded: bool = False
    """The key is the operator's: its `quota.*` and `rateLimit.*` are ceilings (`config/ceilings.py`)."""
    enabled: bool = True
    timeout_ms: int = 8000
    rate_per_second: float | None = None
    rate_burst: float | None = None
    """At most this many calls in any one second (`.rateLimit.burst`); None = the rate itself."""
    hedge: bool = False
    extras: Mapping[str, str] = field(default_factory=dict)
    """Every other suffix (`contactEmail`, `language`, `quota.daily`, …) as a string."""
    home: Path | None = None
    """The runtime's data folder (ZARNIWOOP_HOME), for instances that keep files per scope (the
    local index); None when the factory was built without one."""
    untrusted: bool = False
    """A tenant or project set `baseUrl` (not the operator): no operator key goes there, its calls
    pass the SSRF guard unless `allow_private`, and its error bodies are summarised, not reflected."""
    allow_private: bool = False
    """The operator's `research.allowPrivateEndpoints` (system level only)."""

    def extra(self, name: str, default: str | None = None) -> str | None:
        return self.extras.get(name, default)


@slot_init
@dataclass(frozen=True, slots=True)
class RequestSpec:
    """One HTTP exchange, fully described; the transport sends it."""

    method: str
    url: str
    params: tuple[tuple[str, str], ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    json_body: Any = None
    secret_headers: frozenset[str] = frozenset()
    """Headers beyond the well-known credential headers that carry a secret: the transport never
    sends them to another origin after a redirect (`transport/redirects.py`)."""
    step: str = "search"
    """Which step of a multi-step flow this is; `parse_response` dispatches on it."""
    state: Mapping[str, Any] = field(default_factory=dict)
    """Data a later step needs from an earlier one (PubMed ids, say)."""


@slot_init
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


@slot_init
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
    backoff_seconds: float | None = None
    """The provider asked for a pause before its next call (Stack Exchange's `backoff`, GDELT's "please
    limit requests"): the page still counts, and the endpoint is benched for that long."""
    next_page: Mapping[str, str] | None = None
    """Where the next page starts, in the protocol's own terms (`{"offset": "20"}`, `{"cursor": …}`):
    the dispatcher seals it into the result's `nextPage`, and gives it back as `request.resume`."""


@runtime_checkable
class SearchProtocol(Protocol):
    """A wire format's identity. Satisfied by shape; built-ins and add-ons do not inherit from anything.

    To be usable a protocol also speaks HTTP (`HttpSearchProtocol`: `build_request` and
    `parse_response`) or builds its own instances (`InstantiatesItself`). Everything else is an
    optional capability, one `Protocol` each below; the provider factory checks them once per
    protocol (and warns about attributes that look like a misspelt capability). One a protocol is
    likely to need: `tiers` (`ServesTiers`), where it serves fewer than every tier.
    """

    id: str
    display_name: str
    modalities: frozenset[Modality]
    prompt_hint: str
    key_required: bool
    """True when no search can succeed without a key (→ `skipped_no_key`)."""


@runtime_checkable
class HttpSearchProtocol(SearchProtocol, Protocol):
    """A protocol spoken over HTTP through the shared transport (every built-in but `local`)."""

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec: ...

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        """Parse a 2xx body; raise `ParseError` on a body that is not the expected format."""
        ...


CAPABILITIES: tuple[type, ...] = (
    HttpSearchProtocol,
    InstantiatesItself,
    ValidatesConfig,
    DescribesErrors,
    RejectsKeys,
    ReportsThrottles,
    ReadsErrorStatuses,
    CarriesHtml,
    HasOperatorKey,
    PacedByDefault,
    FasterWithKey,
    LoadsContent,
    ExtractsContentText,
    ServesLanguage,
    CoversDomains,
    ReadsExtras,
    ProbesCheaply,
    DeclinesProbes,
    ContributesSettingForm,
    HonoursFilters,
    ServesTiers,
)
"""Every optional capability a protocol object may have, for the factory's one-time check."""


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


@runtime_checkable
class ReportsQuota(Protocol):
    """An instance that can say what quota its provider has left (awaitable or not)."""

    def current_quota(self, scope: SearchScope) -> Any: ...


@runtime_checkable
class ReportsDomains(Protocol):
    """An instance whose domains depend on its config (the seed's `SearchProviderInstance.domains()`)."""

    def domains(self) -> frozenset[SearchDomain]: ...


COMMON_EXTRAS: frozenset[str] = frozenset(
    {"userAgent", "language", "quota.daily", "quota.monthly", "traceparent"}
)
"""Endpoint extras every protocol honours: `userAgent` replaces Zarniwoop's User-Agent on the wire
(Nominatim and Wikipedia ask for an identifying one), `language` routes locales, `quota.*` budgets,
`traceparent: true` sends the call's W3C trace context (docs/observability.md)."""


def protocol_domains(protocol: SearchProtocol) -> frozenset[SearchDomain]:
    """The protocol's declared `domains`, else one per modality it serves (ACADEMIC → ACADEMIC, …)."""
    if isinstance(protocol, CoversDomains) and protocol.domains:
        return frozenset(SearchDomain.parse(d, field=f"{protocol.id}.domains") for d in protocol.domains)
    return frozenset(MODALITY_DOMAINS[m] for m in protocol.modalities)


def instance_domains(instance: ProviderInstance) -> frozenset[SearchDomain]:
    """The instance's own `domains()` when it has one, else its protocol's."""
    if isinstance(instance, ReportsDomains):
        return frozenset(instance.domains())
    return protocol_domains(instance.protocol)


NO_SOFT_ERROR_STATUSES: frozenset[int] = frozenset()
"""The default of `soft_error_statuses`: every non-2xx answer is an HTTP error."""


def soft_error_statuses(protocol: SearchProtocol) -> frozenset[int]:
    """The non-2xx statuses whose body the protocol's `parse_response` reads itself
    (`ReadsErrorStatuses`: arXiv's 400 error feed → a soft error); by default none."""
    if isinstance(protocol, ReadsErrorStatuses):
        return frozenset(protocol.soft_error_statuses)
    return NO_SOFT_ERROR_STATUSES


EVERY_TIER: frozenset[Tier] = frozenset(Tier)
"""The default of `tiers`: a protocol serves every tier unless it declares fewer (no built-in does)."""


def protocol_tiers(protocol: SearchProtocol) -> frozenset[Tier]:
    """The tiers the protocol serves (`ServesTiers`, checked once by the provider factory); by
    default every one. Read on every search's gate: an attribute read, not a runtime Protocol's
    `isinstance` (which walks its members: +3.6 % of a search's instructions)."""
    declared: frozenset[Tier] | None = getattr(protocol, "tiers", None)
    return EVERY_TIER if declared is None else declared


def carries_html(protocol: SearchProtocol) -> bool:
    """Whether the protocol's titles and snippets carry HTML (`CarriesHtml`). Undeclared: True — an
    add-on's markup is stripped rather than handed to a model as tags."""
    return bool(protocol.html_in_text) if isinstance(protocol, CarriesHtml) else True


def protocol_filters(protocol: SearchProtocol) -> frozenset[str]:
    """The filters the protocol's wire can express (`HonoursFilters`); by default none."""
    return frozenset(protocol.filters) if isinstance(protocol, HonoursFilters) else frozenset()


def known_extras(protocol: SearchProtocol) -> frozenset[str]:
    """Every endpoint extra the protocol reads: the common ones and its own `known_extras`."""
    own = protocol.known_extras if isinstance(protocol, ReadsExtras) else frozenset()
    return COMMON_EXTRAS | frozenset(own)


__all__ = [
    "CAPABILITIES",
    "COMMON_EXTRAS",
    "EVERY_TIER",
    "NO_SOFT_ERROR_STATUSES",
    "CarriesHtml",
    "ContributesSettingForm",
    "CoversDomains",
    "DeclinesProbes",
    "DescribesErrors",
    "ExtractsContentText",
    "FasterWithKey",
    "HasOperatorKey",
    "HonoursFilters",
    "HttpSearchProtocol",
    "InstanceConfig",
    "InstantiatesItself",
    "LoadsContent",
    "PacedByDefault",
    "ProbesCheaply",
    "ProviderInstance",
    "RawResponse",
    "ReadsErrorStatuses",
    "ReadsExtras",
    "RejectsKeys",
    "ReportsDomains",
    "ReportsQuota",
    "ReportsThrottles",
    "RequestSpec",
    "SearchPage",
    "SearchProtocol",
    "Secret",
    "ServesLanguage",
    "ServesTiers",
    "ValidatesConfig",
    "carries_html",
    "instance_domains",
    "known_extras",
    "protocol_domains",
    "protocol_filters",
    "protocol_tiers",
    "soft_error_statuses",
]

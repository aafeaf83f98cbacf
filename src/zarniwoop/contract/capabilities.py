"""The protocol SPI's optional capabilities: one `typing.Protocol` each, satisfied by shape.

A protocol object (`contract/protocol.py`: `SearchProtocol`) is usable once it speaks HTTP
(`HttpSearchProtocol`) or builds its own instances (`InstantiatesItself`, here); everything else it
may offer is one of these hooks — a config check, an error reader, a pace, a probe, a form, … The
provider factory checks them once per protocol (`protocol.CAPABILITIES`) and warns about an
attribute that looks like a misspelt one. Where a capability has a default, a function beside the
SPI reads it (`protocol.soft_error_statuses`, `protocol.carries_html`, `protocol.known_extras`,
`protocol.protocol_domains`, `protocol.protocol_tiers`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .enums import SearchDomain, Tier
    from .protocol import InstanceConfig, ProviderInstance, RawResponse, RequestSpec
    from .results import ContentRef


@runtime_checkable
class InstantiatesItself(Protocol):
    """Builds its own `ProviderInstance` (more than one exchange per page, or no HTTP: `local`).
    `transport` is the shared `HttpTransport`."""

    def instantiate(self, config: InstanceConfig, transport: Any) -> ProviderInstance: ...


@runtime_checkable
class ValidatesConfig(Protocol):
    """Raises `ConfigError` at boot for a config it cannot work with (SearXNG without `baseUrl`)."""

    def validate_config(self, config: InstanceConfig) -> None: ...


@runtime_checkable
class DescribesErrors(Protocol):
    """The provider's explanation in a non-2xx body, put into the error message."""

    def describe_error(self, raw: RawResponse) -> str | None: ...


@runtime_checkable
class RejectsKeys(Protocol):
    """A non-2xx answer that means "wrong key" although its status is not 401/403 (NCBI 400)."""

    def rejects_key(self, raw: RawResponse) -> bool: ...


@runtime_checkable
class ReportsThrottles(Protocol):
    """A non-2xx answer that is a rate limit although its status is not 429 (GitHub's 403 with no
    calls left, Stack Exchange's 502 `throttle_violation`): the seconds to wait, or None when the
    answer is not a throttle (then the status is handled as usual) → `RateLimitedError`."""

    def throttled(self, raw: RawResponse) -> float | None: ...


@runtime_checkable
class ReadsErrorStatuses(Protocol):
    """Non-2xx statuses whose body `parse_response` reads (arXiv's 400 error feed → a soft error)."""

    soft_error_statuses: frozenset[int]


@runtime_checkable
class ServesTiers(Protocol):
    """The tiers the protocol serves, where not every one: an instance whose protocol lacks the
    request's tier is skipped as `skipped_unsupported`, also when pinned. Undeclared: every tier."""

    tiers: frozenset[Tier]


@runtime_checkable
class CarriesHtml(Protocol):
    """Whether the wire's titles and snippets carry HTML (Wikipedia's search-match `<span>`s, Brave's
    `<strong>`, Stack Exchange's entities): True, parsing strips tags and decodes entities; False,
    the text is plain and a literal `<` or `&` in it is content (`a < b`, `Vec<T>`), kept as sent."""

    html_in_text: bool


@runtime_checkable
class HasOperatorKey(Protocol):
    """The operator environment variable holding a key for this protocol (`SERPER_API_KEY`)."""

    env_key: str


@runtime_checkable
class PacedByDefault(Protocol):
    """The documented free-tier pace, requests per second (`.rateLimit.perSecond` overrides it)."""

    default_rate_per_second: float | None


@runtime_checkable
class FasterWithKey(Protocol):
    """The pace when a key resolves (PubMed 10/s instead of 3/s)."""

    default_rate_with_key: float


@runtime_checkable
class LoadsContent(Protocol):
    """The call that fetches a STASH_ON_DEMAND reference (PubMed efetch)."""

    def load_content(self, ref: ContentRef, config: InstanceConfig) -> RequestSpec: ...


@runtime_checkable
class ExtractsContentText(Protocol):
    """That call's body as text, for the content store."""

    def content_text(self, body: bytes) -> str: ...


@runtime_checkable
class ServesLanguage(Protocol):
    """The language an instance serves, derived from its config (locale routing)."""

    def instance_language(self, config: InstanceConfig) -> str | None: ...


@runtime_checkable
class ProbesCheaply(Protocol):
    """The cheapest call that shows the endpoint is up (SearXNG's `/healthz`), for free probes."""

    def probe_request(self, config: InstanceConfig) -> RequestSpec: ...


@runtime_checkable
class DeclinesProbes(Protocol):
    """`probes_allowed = False`: a keyless API whose small daily quota a probe every few minutes
    would eat (Stack Exchange: 300 calls a day without a key) keeps last-outcome reachability."""

    probes_allowed: bool


@runtime_checkable
class ContributesSettingForm(Protocol):
    """The web console's form for this protocol's endpoints: `{"title", "fields": [{"key", "type",
    "label", "help", "default", "secret"}]}` (the shape of the bundled `setting_forms/research.yaml`)."""

    setting_form: Mapping[str, Any]


@runtime_checkable
class CoversDomains(Protocol):
    """The subjects the protocol's index covers (PubMed: BIOMEDICAL, ACADEMIC); without it, one
    domain per modality it serves. The Plan step weighs sources by domain."""

    domains: frozenset[SearchDomain]


@runtime_checkable
class ReadsExtras(Protocol):
    """The endpoint suffixes it reads from `InstanceConfig.extras` beyond `COMMON_EXTRAS`; any other
    suffix is warned about at start-up, naming the key and these."""

    known_extras: frozenset[str]


@runtime_checkable
class HonoursFilters(Protocol):
    """The search filters its wire can express (`contract/filters.py` `FILTER_NAMES`: `timeRange`,
    `region`, `page`, …) for at least one modality it serves; each request says what it did honour
    in `RequestSpec.state["honoured"]`. With `strictFilters` a candidate that declares no support
    for a requested filter is skipped (`skipped_unsupported`); domain filters never skip one, the
    dispatcher applies them to the hits instead."""

    filters: frozenset[str]

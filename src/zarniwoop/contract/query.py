"""What a caller asks for: `SearchRequest` and the `(tenant, project)` scope it runs in."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from .enums import EXPERT_PARAMS, Modality, Tier
from .errors import InvalidRequestError
from .filters import NO_FILTERS, PageResume, SearchFilters
from .replacing import replacer, slot_init

MAX_QUERY_CHARS = 2000
"""Longer queries are refused: no provider accepts them and they only cost bandwidth."""
MAX_RESULTS_LIMIT = 100
PROFILE_RULE = "[a-z0-9][a-z0-9_-]{0,63}"
"""An agent profile's name: one segment of `research.profile.<name>.providers`, so no dots."""
_PROFILE = re.compile(PROFILE_RULE)


def check_profile(field: str, value: object) -> str | None:
    """A profile name, or None for an empty/absent one (= the global order); else
    `InvalidRequestError` naming `field`."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or _PROFILE.fullmatch(value) is None:
        shown = repr(value)[:80]
        raise InvalidRequestError(field, f"expected a profile name matching {PROFILE_RULE}, got {shown}")
    return value


@slot_init
@dataclass(frozen=True, slots=True)
class SearchScope:
    """The `(tenant, project)` a search runs for; provider instances, cooldowns and quotas are per scope."""

    tenant: str = "default"
    project: str = "default"

    def __post_init__(self) -> None:
        # The seed's ZarniwoopException("research tools require a project scope"): a blank scope would
        # share cooldowns, quotas and cached instances across every caller that forgot to name one.
        for name in ("tenant", "project"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                from .errors import ScopeRequiredError

                raise ScopeRequiredError(name)

    def __str__(self) -> str:
        return f"{self.tenant}/{self.project}"


@slot_init
@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search, validated on construction (use `SearchRequest.create` for untrusted input)."""

    query: str
    modality: Modality
    tier: Tier = Tier.NORMAL
    max_results: int = 10
    locale: str | None = None
    pinned_provider_id: str | None = None
    expert_params: Mapping[str, str] = field(default_factory=dict)
    profile: str | None = None
    """The agent profile narrowing the cascade (`research.profile.<name>`); None: the global order."""
    today: date | None = field(default=None, compare=False)
    """The date (UTC) the search runs on. The dispatcher sets it from its injected clock, so
    protocols never read one: open date ranges end here (Brave's `freshness`, SearXNG's
    `time_range`). Not part of the request's identity (`cache_key`, equality); None → a protocol
    leaves the date-dependent part out and says so in its note."""
    filters: SearchFilters = NO_FILTERS
    """Domains in and out, time range, safe search, language, region, page (`contract/filters.py`)."""
    resume: PageResume | None = field(default=None, compare=False)
    """The position `filters.page` decodes to, set by the dispatcher once it checked the cursor;
    protocols read it (`request.resume.get("offset")`). Not part of the identity: `filters.page` is."""

    def on(self, today: date) -> SearchRequest:
        """The same request, run on `today` (a fixed date in tests, the clock's in the dispatcher)."""
        return _replace_request(self, today=today)

    @classmethod
    def create(
        cls,
        query: Any,
        modality: Any,
        tier: Any = Tier.NORMAL,
        max_results: Any = 10,
        locale: str | None = None,
        pinned_provider_id: str | None = None,
        expert_params: Mapping[str, Any] | None = None,
        profile: Any = None,
        filters: SearchFilters | None = None,
    ) -> SearchRequest:
        """Validate untrusted input; every problem raises `InvalidRequestError` naming the field."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidRequestError("query", "must be a non-empty string")
        query = query.strip()
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidRequestError(
                "query", f"must be at most {MAX_QUERY_CHARS} characters, got {len(query)}"
            )
        if isinstance(max_results, bool) or not isinstance(max_results, int):
            try:
                max_results = int(str(max_results))
            except ValueError:
                raise InvalidRequestError("maxResults", f"must be an integer, got {max_results!r}") from None
        if not 0 < max_results <= MAX_RESULTS_LIMIT:
            raise InvalidRequestError(
                "maxResults", f"must be between 1 and {MAX_RESULTS_LIMIT}, got {max_results}"
            )
        params = _validate_expert_params(expert_params or {})
        filters = filters or NO_FILTERS
        if filters.time_range and "dateFrom" in params:
            raise InvalidRequestError(
                "timeRange", "conflicts with dateFrom: give a relative range or an absolute date, not both"
            )
        tier_value = Tier.parse(tier, field="tier")
        if params or pinned_provider_id:
            tier_value = Tier.EXPERT
        return cls(
            query=query,
            modality=Modality.parse(modality, field="modality"),
            tier=tier_value,
            max_results=max_results,
            locale=(locale or None),
            pinned_provider_id=(pinned_provider_id or None),
            expert_params=params,
            profile=check_profile("profile", profile),
            filters=filters,
        )

    def cache_key(self) -> tuple[Any, ...]:
        """Identity of the request for coalescing and caching (whitespace and case of the query folded);
        every filter and the page cursor are part of it."""
        return (
            " ".join(self.query.lower().split()),
            self.modality,
            self.tier,
            self.max_results,
            self.locale,
            self.pinned_provider_id,
            tuple(sorted(self.expert_params.items())),
            self.profile,
            None if self.filters is NO_FILTERS else self.filters,
        )


_replace_request = replacer(SearchRequest)


def _validate_expert_params(raw: Mapping[str, Any]) -> dict[str, str]:
    params: dict[str, str] = {}
    for key, value in raw.items():
        if value is None or value == "":
            continue
        if key not in EXPERT_PARAMS:
            raise InvalidRequestError(
                key, f"unknown expert parameter; expected one of {', '.join(EXPERT_PARAMS)}"
            )
        text = str(value).strip()
        if key in ("dateFrom", "dateTo"):
            try:
                date.fromisoformat(text)
            except ValueError:
                raise InvalidRequestError(key, f"must be an ISO date (YYYY-MM-DD), got {text!r}") from None
        params[key] = text
    if "dateFrom" in params and "dateTo" in params and params["dateFrom"] > params["dateTo"]:
        raise InvalidRequestError("dateTo", "must not be before dateFrom")
    return params

"""What a caller may narrow a search by, beside the seed's expert parameters (issue 47).

`SearchFilters` travels inside `SearchRequest.filters`: domains in and out, a relative time range,
safe search, language and region, the opaque cursor of the page to resume (`page`) and whether a
provider that cannot honour a filter may serve anyway (`strict`). Validation names the field, as
everywhere in the contract:

    SearchFilters.create(exclude_domains=["wikipedia.org"], time_range="week")
    SearchFilters.create(include_domains=["not a domain"])  # InvalidRequestError("includeDomains", …)

A protocol says what its wire honours by adding the filter's wire name (`FILTER_NAMES`) to the
`honoured` names of its request (`RequestSpec.state["honoured"]`); what it leaves out is reported in
the result's `ignoredParams`, and domain filters it leaves out are applied to the hits instead
(`dispatch/filtering.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .errors import InvalidRequestError
from .replacing import slot_init

TIME_RANGES: tuple[str, ...] = ("day", "week", "month", "year")
"""`timeRange` values, narrowest first."""
TIME_RANGE_DAYS: dict[str, int] = {"day": 1, "week": 7, "month": 31, "year": 366}
"""How many days back each `timeRange` reaches (for wires that take a start date)."""
SAFE_SEARCH: tuple[str, ...] = ("off", "moderate", "strict")
MAX_DOMAINS = 20
"""More domains than this is a query no provider takes in one request."""
MAX_CURSOR_CHARS = 2048
FILTER_NAMES: tuple[str, ...] = (
    "includeDomains",
    "excludeDomains",
    "timeRange",
    "safeSearch",
    "language",
    "region",
    "page",
)
"""The filters' wire names: how `ignoredParams` and a protocol's `honoured` names spell them."""
DOMAIN_FILTERS = frozenset({"includeDomains", "excludeDomains"})
"""The filters any provider can honour after the fact: hits outside them are dropped."""

DOMAIN_RULE = r"(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}"
_DOMAIN = re.compile(DOMAIN_RULE)
LANGUAGE_RULE = r"[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*"
_LANGUAGE = re.compile(LANGUAGE_RULE)
REGION_RULE = r"[A-Za-z]{2}"
_REGION = re.compile(REGION_RULE)
CURSOR_RULE = r"[A-Za-z0-9_.=-]{1,2048}"
_CURSOR = re.compile(CURSOR_RULE)


@slot_init
@dataclass(frozen=True, slots=True)
class SearchFilters:
    """The filters of one search; `NO_FILTERS` when none is set (most searches)."""

    include_domains: tuple[str, ...] = ()
    exclude_domains: tuple[str, ...] = ()
    time_range: str | None = None
    safe_search: str | None = None
    language: str | None = None
    """BCP 47 (`de`, `pt-BR`), as given."""
    region: str | None = None
    """ISO 3166-1 alpha-2, upper case (`DE`)."""
    page: str | None = None
    """The opaque cursor of a previous result's `nextPage`."""
    strict: bool = False
    """A candidate that cannot honour a filter is skipped (`skipped_unsupported`) instead of serving."""

    @classmethod
    def create(
        cls,
        include_domains: Any = None,
        exclude_domains: Any = None,
        time_range: Any = None,
        safe_search: Any = None,
        language: Any = None,
        region: Any = None,
        page: Any = None,
        strict: Any = False,
    ) -> SearchFilters:
        """Validate untrusted input; every problem raises `InvalidRequestError` naming the field."""
        include = _domains("includeDomains", include_domains)
        exclude = _domains("excludeDomains", exclude_domains)
        both = sorted(set(include) & set(exclude))
        if both:
            raise InvalidRequestError("excludeDomains", f"{both[0]!r} is also in includeDomains")
        filters = cls(
            include_domains=include,
            exclude_domains=exclude,
            time_range=_choice("timeRange", time_range, TIME_RANGES),
            safe_search=_choice("safeSearch", safe_search, SAFE_SEARCH),
            language=_pattern(
                "language", language, _LANGUAGE, "a BCP 47 language tag such as `en` or `pt-BR`"
            ),
            region=_upper(
                _pattern("region", region, _REGION, "an ISO 3166-1 alpha-2 country code such as `DE`")
            ),
            page=_pattern("page", page, _CURSOR, "the `nextPage` cursor of a previous result"),
            strict=_flag("strictFilters", strict),
        )
        return NO_FILTERS if filters == NO_FILTERS else filters

    def requested(self) -> tuple[str, ...]:
        """The wire names of the filters set (`page` included), in `FILTER_NAMES` order."""
        values = (
            self.include_domains,
            self.exclude_domains,
            self.time_range,
            self.safe_search,
            self.language,
            self.region,
            self.page,
        )
        return tuple(name for name, value in zip(FILTER_NAMES, values, strict=True) if value)

    def merged_over(self, defaults: SearchFilters) -> SearchFilters:
        """These filters over a profile's `defaults`: each filter the caller set wins."""
        if defaults is NO_FILTERS:
            return self
        return SearchFilters(
            include_domains=self.include_domains or defaults.include_domains,
            exclude_domains=self.exclude_domains or defaults.exclude_domains,
            time_range=self.time_range or defaults.time_range,
            safe_search=self.safe_search or defaults.safe_search,
            language=self.language or defaults.language,
            region=self.region or defaults.region,
            page=self.page,
            strict=self.strict or defaults.strict,
        )

    def to_json(self) -> dict[str, Any]:
        """The set filters under their wire names (`strictFilters` when true)."""
        out: dict[str, Any] = {}
        if self.include_domains:
            out["includeDomains"] = list(self.include_domains)
        if self.exclude_domains:
            out["excludeDomains"] = list(self.exclude_domains)
        for name, value in (
            ("timeRange", self.time_range),
            ("safeSearch", self.safe_search),
            ("language", self.language),
            ("region", self.region),
            ("page", self.page),
        ):
            if value:
                out[name] = value
        if self.strict:
            out["strictFilters"] = True
        return out


NO_FILTERS = SearchFilters()


@dataclass(frozen=True, slots=True)
class PageResume:
    """Where a `page` cursor resumes: the instance that produced the previous page (the search is
    pinned to it, like EXPERT's `pinnedProviderId`) and the protocol's own position there (an
    offset, a page number, an upstream cursor), as the protocol wrote it in `SearchPage.next_page`."""

    instance_id: str
    state: tuple[tuple[str, str], ...]

    def get(self, name: str, default: str | None = None) -> str | None:
        return dict(self.state).get(name, default)


def domain_matches(host: str, domains: Iterable[str]) -> bool:
    """Whether `host` is one of `domains` or a subdomain of one (`en.wikipedia.org` ∈ `wikipedia.org`)."""
    host = host.lower().rstrip(".")
    return any(host == d or host.endswith("." + d) for d in domains)


def _domains(field: str, value: Any) -> tuple[str, ...]:
    if value is None or value == "" or value == []:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise InvalidRequestError(field, f"expected a list of domains, got {type(value).__name__}")
    if len(items) > MAX_DOMAINS:
        raise InvalidRequestError(field, f"at most {MAX_DOMAINS} domains, got {len(items)}")
    out: list[str] = []
    for item in items:
        text = item.strip().lower().rstrip(".") if isinstance(item, str) else None
        if text and text.startswith("www."):
            text = text[4:]
        if not text or _DOMAIN.fullmatch(text) is None:
            shown = repr(item)[:80]
            raise InvalidRequestError(field, f"expected a domain name such as `example.org`, got {shown}")
        if text not in out:
            out.append(text)
    return tuple(out)


def _choice(field: str, value: Any, allowed: tuple[str, ...]) -> str | None:
    if value is None or value == "":
        return None
    text = value.strip().lower() if isinstance(value, str) else None
    if text not in allowed:
        raise InvalidRequestError(field, f"expected one of {', '.join(allowed)}, got {repr(value)[:40]}")
    return text


def _pattern(field: str, value: Any, rule: re.Pattern[str], expected: str) -> str | None:
    if value is None or value == "":
        return None
    text = value.strip() if isinstance(value, str) else None
    if not text or rule.fullmatch(text) is None:
        raise InvalidRequestError(field, f"expected {expected}, got {repr(value)[:80]}")
    return text


def _upper(value: str | None) -> str | None:
    return value.upper() if value else None


def _flag(field: str, value: Any) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    raise InvalidRequestError(field, f"expected true or false, got {repr(value)[:40]}")


__all__ = [
    "DOMAIN_FILTERS",
    "FILTER_NAMES",
    "NO_FILTERS",
    "SAFE_SEARCH",
    "TIME_RANGES",
    "TIME_RANGE_DAYS",
    "PageResume",
    "SearchFilters",
    "domain_matches",
]

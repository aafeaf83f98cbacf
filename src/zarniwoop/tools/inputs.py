"""The five tools' input models: pydantic at the edge, one JSON schema per tool for every surface.

The models are built from the contract (the `Modality` enum, `MAX_QUERY_CHARS`,
`MAX_RESULTS_LIMIT`, the pipeline's `MAX_DEPTH`), so MCP, HTTP, the Python API and `GET /v1/tools` all publish the same
schema and accept the same arguments. Wire names are camelCase (`maxResults`, `dateFrom`,
`pinnedProviderId`); the snake_case spelling is accepted too, so Python callers can pass either.
Unknown parameters are refused, naming the parameter, rather than silently ignored: an agent
that sends `limit` instead of `maxResults` learns so at once. `null` means "not given": a strict
function-calling model must send every parameter, and sends `null` for those it means to leave
unset, so a `null` is dropped before validation (the default applies; a required one is missing).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, model_validator
from pydantic.alias_generators import to_camel

from ..contract.enums import Modality
from ..contract.filters import MAX_DOMAINS, NO_FILTERS, SearchFilters
from ..contract.query import MAX_QUERY_CHARS, MAX_RESULTS_LIMIT, PROFILE_RULE
from ..research.verdicts import MAX_DEPTH, MAX_QUESTION_CHARS
from .schema import nullable_optionals

RICH_MODALITIES: tuple[Modality, ...] = (Modality.WEB, Modality.IMAGE, Modality.VIDEO, Modality.NEWS)
"""What `research_rich` searches, concurrently, under one deadline."""


def _modality(value: Any) -> Any:
    # Any case on input (DESIGN §3); the enum check itself stays pydantic's, so its error lists the values.
    return value.strip().upper() if isinstance(value, str) else value


def _integer(value: Any) -> Any:
    # pydantic's lax mode would take `true` as 1; a boolean for a count is a caller's mistake.
    if isinstance(value, bool):
        raise ValueError("must be an integer, got a boolean")
    return value


ModalityParam = Annotated[
    Modality,
    BeforeValidator(_modality),
    Field(
        description=(
            "What kind of source to search: WEB, IMAGE, VIDEO, PDF, NEWS, ACADEMIC (papers), "
            "ENCYCLOPEDIA, BOOK, MAP, CODE, INTERNAL_DOC, RAG. Any case is accepted."
        )
    ),
]
QueryText = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUERY_CHARS),
    Field(description=f"Free-text search query (at most {MAX_QUERY_CHARS} characters)."),
]
MaxResults = Annotated[
    int,
    Field(ge=1, le=MAX_RESULTS_LIMIT, description=f"Maximum number of hits (1–{MAX_RESULTS_LIMIT})."),
    BeforeValidator(_integer),  # after Field, so the bounds stay `minimum`/`maximum` in the schema
]
ShortText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
ProfileName = Annotated[
    Annotated[str, StringConstraints(strip_whitespace=True, pattern=f"^{PROFILE_RULE}$")] | None,
    Field(
        description=(
            "Route through this agent profile's provider list (see docs: Agent profiles); "
            "omit for the global order."
        )
    ),
]


class ToolInput(BaseModel):
    """Common configuration: camelCase on the wire, snake_case accepted, unknown parameters refused."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        frozen=True,
        json_schema_extra=nullable_optionals,  # also in /openapi.json: the same schema everywhere
    )

    @model_validator(mode="before")
    @classmethod
    def _null_is_not_given(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


DomainList = Annotated[
    list[Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=253)]] | None,
    Field(max_length=MAX_DOMAINS),
]


_FILTER_FIELDS = frozenset(
    {"include_domains", "exclude_domains", "time_range", "safe_search", "region", "page", "strict_filters"}
)
"""`FilterInput`'s own fields: a search that sets none of them has `NO_FILTERS`."""


class FilterInput(ToolInput):
    """The search filters of `contract/filters.py`, shared by both search tools. Listed after a tool's
    own parameters: pydantic orders fields from the last base class on, so a tool is
    `class Tool(FilterInput, _ToolFields)` and a reader (a model) meets `query` first."""

    include_domains: Annotated[
        DomainList,
        Field(description="Only hits from these domains (and their subdomains), e.g. [`nature.com`]."),
    ] = None
    exclude_domains: Annotated[
        DomainList,
        Field(description="No hits from these domains (and their subdomains), e.g. [`pinterest.com`]."),
    ] = None
    time_range: Annotated[
        Literal["day", "week", "month", "year"] | None,
        Field(description="Only results from the last day, week, month or year."),
    ] = None
    safe_search: Annotated[
        Literal["off", "moderate", "strict"] | None, Field(description="Filter explicit content.")
    ] = None
    region: Annotated[
        Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^[A-Za-z]{2}$")] | None,
        Field(description="Country of the results, ISO 3166 alpha-2, e.g. `DE`."),
    ] = None
    page: Annotated[
        Annotated[str, StringConstraints(max_length=2048)] | None,
        Field(description="The `nextPage` of a previous result of this same search: its next page."),
    ] = None
    strict_filters: Annotated[
        bool | None,
        Field(description="Skip providers that cannot honour a filter instead of reporting it ignored."),
    ] = None

    def search_filters(self, language: str | None = None) -> SearchFilters:
        """The contract's filters (`InvalidRequestError` naming the field for a bad domain, …)."""
        if not (self.model_fields_set & _FILTER_FIELDS) and language is None:
            return NO_FILTERS  # most searches set none: no validation to run
        return SearchFilters.create(
            include_domains=self.include_domains,
            exclude_domains=self.exclude_domains,
            time_range=self.time_range,
            safe_search=self.safe_search,
            language=language,
            region=self.region,
            page=self.page,
            strict=bool(self.strict_filters),
        )


class _SearchFields(ToolInput):
    query: QueryText
    modality: ModalityParam
    max_results: MaxResults = 10
    locale: (
        Annotated[
            str,
            StringConstraints(strip_whitespace=True, pattern=r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$"),
            Field(description="Preferred language/region of results, e.g. `de` or `en-GB`."),
        ]
        | None
    ) = None
    profile: ProfileName = None


class ResearchSearchInput(FilterInput, _SearchFields):
    """Search one modality through the provider cascade; the first provider with hits answers."""


class _ExpertFields(ToolInput):
    query: QueryText
    modality: ModalityParam
    max_results: MaxResults
    site: Annotated[ShortText | None, Field(description="Only results from this site, e.g. `arxiv.org`.")] = (
        None
    )
    filetype: Annotated[
        Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^[A-Za-z0-9]{1,10}$")] | None,
        Field(description="Only files of this type, e.g. `pdf`."),
    ] = None
    date_from: Annotated[
        dt.date | None, Field(description="Earliest publication date (ISO, YYYY-MM-DD).")
    ] = None
    date_to: Annotated[dt.date | None, Field(description="Latest publication date (ISO, YYYY-MM-DD).")] = None
    domain: Annotated[
        ShortText | None, Field(description="Subject domain hint for providers that take one.")
    ] = None
    language: Annotated[
        Annotated[
            str, StringConstraints(strip_whitespace=True, pattern=r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$")
        ]
        | None,
        Field(description="Language of the results, e.g. `en`."),
    ] = None
    pinned_provider_id: Annotated[
        ShortText | None,
        Field(
            description="Ask exactly this provider instance (see research_providers); no fallback to others."
        ),
    ] = None
    profile: ProfileName = None

    def expert_params(self) -> dict[str, str]:
        """The contract's expert parameters (DESIGN §3), ISO dates as text, unset ones left out."""
        raw = {
            "site": self.site,
            "filetype": self.filetype,
            "dateFrom": self.date_from.isoformat() if self.date_from else None,
            "dateTo": self.date_to.isoformat() if self.date_to else None,
            "domain": self.domain,
            "language": self.language,
        }
        return {k: v for k, v in raw.items() if v}


class ResearchSearchExpertInput(FilterInput, _ExpertFields):
    """Search with filters (site, file type, date range, …) or pinned to one provider instance."""


class ResearchRichInput(ToolInput):
    """WEB, IMAGE, VIDEO and NEWS searched concurrently for one query, results grouped by modality."""

    query: QueryText
    max_results: Annotated[MaxResults, Field(description="Maximum number of hits per modality.")]
    profile: ProfileName = None


class ResearchInvestigateInput(ToolInput):
    """A curated multi-source investigation of a question: plan, search, evaluate, rank."""

    question: Annotated[
        str,
        StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUESTION_CHARS),
        Field(description=f"The research question (at most {MAX_QUESTION_CHARS} characters)."),
    ]
    max_results: MaxResults | None = None
    depth: Annotated[
        int | None,
        Field(
            ge=0,
            le=MAX_DEPTH,
            description=f"How deep to dig: 0 = hit lists only, up to {MAX_DEPTH} = load and read hit contents.",
        ),
        BeforeValidator(_integer),
    ] = None
    profile: ProfileName = None
    insights: Annotated[
        bool | None,
        Field(
            description=(
                "Also extract claims (each citing the hits it rests on) and entities from the kept hits. "
                "Default on; false skips it."
            )
        ),
    ] = None


class ResearchProvidersInput(ToolInput):
    """Takes no parameters."""


__all__ = [
    "RICH_MODALITIES",
    "FilterInput",
    "ResearchInvestigateInput",
    "ResearchProvidersInput",
    "ResearchRichInput",
    "ResearchSearchExpertInput",
    "ResearchSearchInput",
    "ToolInput",
]

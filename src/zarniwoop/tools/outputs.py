"""The tools' output models: the MCP `outputSchema`s, the OpenAPI response schemas, and compaction.

One model per JSON shape, so that a generated client is typed and an MCP host can validate:

- `SearchResult` — DESIGN §3, `research_search` / `research_search_expert` and `POST /v1/research/search*`;
- `RichResult` — `research_rich`: `{query, maxResults, results: {WEB: ModalityResult, …}}`;
- `RankedHitSet` — `research_investigate`: the curated pipeline's ranked and dropped hits;
- `ProviderList` — `research_providers`: `{"providers": [ProviderEntry, …]}`.

Every field that can be absent is optional, so the same model validates the full JSON of the HTTP
research endpoints (nulls and all, as DESIGN §3 shows it) and the compact `structuredContent` of a
tool call. `compact(spec_name, structured)` makes the latter: nothing null or empty, nothing said
twice — a hit's `modality` and `source` when the result already says them, inline text that is its
snippet again (or a snippet that is the start of its inline text), `returnedCount` (the length of
`hits`), each rich section's `query`/`modality`/`tier`, the investigation's `plan` (its searches
are in `searches`, its strategy in `strategies`, its rationale opens `rationale`); and a dropped hit
is only its title, URL and source beside the reason it was dropped. A model reading the structured
answer pays only for what is news; `scripts/tool_sizes.py` measures it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..contract.enums import Availability, ContentInline, Modality, Outcome, SearchDomain, Tier
from .schema import inline_refs

TRACE_ID = "The OpenTelemetry trace this call ran in (32 hex digits); absent when tracing is off."


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True)


class Content(_Wire):
    """A hit's body: short text inline, or a reference the content store loads on demand."""

    inline: ContentInline
    text: str | None = None
    ref: str | None = None
    mime_type: str | None = None


class SearchHit(_Wire):
    title: str
    url: str
    snippet: str | None = None
    source: str | None = None
    modality: Modality | None = Field(None, description="Left out where the enclosing result names it.")
    content: Content | None = None
    extras: dict[str, Any] = Field(
        default_factory=dict, description="Per modality: ACADEMIC doi, authors, year, venue, … (DESIGN §3)."
    )


class Attempt(_Wire):
    """One candidate provider's fate during the cascade."""

    provider_instance_id: str
    outcome: Outcome
    error_message: str | None = None
    duration_ms: int = 0
    panic: bool = False
    cause: str | None = Field(
        None, description="A failure's kind in one word: dns, proxy, timeout, no_key, …"
    )
    hint: str | None = Field(None, description="What would fix it: the key's variable of a no_key skip.")


class IgnoredParam(_Wire):
    """A filter the serving provider could not honour."""

    param: str
    reason: str


class RoutedProfile(_Wire):
    """The agent profile whose cascade served a result (docs/providers.md, "Agent profiles")."""

    name: str
    sha256: str = Field(description="SHA-256 of the profile's canonical definition.")


class ModalityResult(_Wire):
    """One modality's answer: the provider that served it, its hits, every attempt."""

    provider_instance_id: str | None = None
    hits: list[SearchHit] = Field(default_factory=list)
    returned_count: int | None = Field(None, description="The number of hits (full JSON only).")
    dropped_count: int = 0
    note: str | None = None
    error_message: str | None = Field(None, description="Set when every provider failed; names each reason.")
    error_summary: str | None = Field(
        None, description="With errorMessage: the failure by cause first, in one line (offline? …)."
    )
    upstream_headers: dict[str, str] = Field(default_factory=dict)
    attempts: list[Attempt] = Field(default_factory=list)
    cached: bool = False
    cached_at: str | None = Field(None, description="When the provider gave a cached answer (ISO-8601 UTC).")
    profile: RoutedProfile | None = Field(None, description="Set when an agent profile routed this search.")
    next_page: str | None = Field(
        None, description="Pass as `page` with the same search for the next page; null when there is no more."
    )
    ignored_params: list[IgnoredParam] = Field(
        default_factory=list, description="Filters the serving provider could not honour, with the reason."
    )
    dropped_reasons: dict[str, int] = Field(
        default_factory=dict, description="Why droppedCount hits were dropped (excludeDomains, …)."
    )


class SearchResult(ModalityResult):
    query: str
    modality: Modality
    tier: Tier
    trace_id: str | None = Field(None, description=TRACE_ID)


class RichResult(_Wire):
    query: str
    max_results: int | None = None
    results: dict[str, ModalityResult] = Field(
        description="WEB, IMAGE, VIDEO and NEWS, each its own cascade."
    )
    trace_id: str | None = Field(None, description=TRACE_ID)


class HitSource(_Wire):
    provider_instance_id: str
    rank: int
    query: str


class PlannedSearch(_Wire):
    query: str
    modality: Modality
    source_affinity: dict[str, float] = Field(default_factory=dict)


class Plan(_Wire):
    searches: list[PlannedSearch] = Field(default_factory=list)
    rationale: str = ""
    strategy: str = ""


class RankedHit(_Wire):
    key: str = Field("", description="The dedup identity (doi:…, arxiv:…, url:…) that insights cite.")
    hit: SearchHit
    score: float
    relevance_score: float
    affinity: float = 1.0
    sources: list[HitSource] = Field(default_factory=list)
    reason: str = ""
    rerank_score: float | None = Field(None, description="Set when a re-rank recipe ordered the hits.")


class DroppedHit(_Wire):
    key: str = ""
    hit: SearchHit
    reason: str


class Claim(_Wire):
    text: str
    citations: list[str] = Field(description="Keys of the ranked hits that state it (at least one).")
    support: int
    confidence: float


class Entity(_Wire):
    name: str
    type: str
    keys: list[str]


class Insights(_Wire):
    claims: list[Claim] = Field(default_factory=list)
    entities: list[Entity] = Field(default_factory=list)


class FailedSearch(_Wire):
    query: str
    modality: Modality
    error_message: str


class SearchRun(_Wire):
    """One search the pipeline ran: which provider served it, how many hits, its error."""

    query: str
    modality: Modality
    provider_instance_id: str | None = None
    hits: int = 0
    error_message: str | None = None
    cached: bool = False


class RankedHitSet(_Wire):
    question: str
    plan: Plan | None = Field(
        None, description="Full JSON only: the tool result leaves it out (see searches)."
    )
    hits: list[RankedHit] = Field(default_factory=list)
    dropped: list[DroppedHit] = Field(default_factory=list)
    refine_depth: int = 0
    refine_plan: Plan | None = Field(None, description="The second wave's plan when Refine ran.")
    insights: Insights | None = Field(None, description="Null when insights are off.")
    failures: list[FailedSearch] = Field(default_factory=list)
    rationale: str = ""
    strategies: dict[str, str] = Field(default_factory=dict)
    searches: list[SearchRun] = Field(default_factory=list)
    usage: dict[str, int] = Field(default_factory=dict, description="searches, durationMs")
    trace_id: str | None = Field(None, description=TRACE_ID)


class Quota(_Wire):
    used: int | None = None
    limit: int | None = None
    remaining: int | None = None
    period: str | None = None
    resets_at: str | None = None
    source: str | None = None


class Cooldown(_Wire):
    modality: Modality
    until: str
    reason: str | None = None


class ProviderEntry(_Wire):
    id: str
    protocol: str
    display_name: str
    modalities: list[Modality]
    tiers: list[Tier] = Field(default_factory=list)
    domains: list[SearchDomain] = Field(default_factory=list)
    enabled: bool
    keyable: bool
    availability: Availability
    cooldown_until: str | None = None
    cooldowns: list[Cooldown] = Field(default_factory=list)
    quota: Quota | None = None
    reachable: bool | None = Field(None, description="Absent or null: not called yet.")
    status_text: str | None = Field(None, description="The instance's own status line, if it has one.")
    last_error: str | None = Field(None, description="Admins only.")
    key_source: str | None = Field(None, description="Admins only.")


class ProviderList(_Wire):
    providers: list[ProviderEntry]
    trace_id: str | None = Field(None, description=TRACE_ID)


OUTPUT_MODELS: Mapping[str, type[_Wire]] = {
    "research_search": SearchResult,
    "research_search_expert": SearchResult,
    "research_rich": RichResult,
    "research_investigate": RankedHitSet,
    "research_providers": ProviderList,
}


@cache
def _output_schema(model: type[BaseModel]) -> dict[str, Any]:
    return inline_refs(model.model_json_schema(by_alias=True, mode="serialization"))


def output_schema(name: str) -> dict[str, Any]:
    """The MCP `outputSchema` of a tool (a fresh copy each call)."""
    return copy.deepcopy(_output_schema(OUTPUT_MODELS[name]))


def compact(name: str, structured: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's full JSON without nulls, empties, defaults and repetitions (module docstring)."""
    data = copy.deepcopy(dict(structured))
    if name in ("research_search", "research_search_expert"):
        _compact_result(data, keep_identity=True)
    elif name == "research_rich":
        for section in data.get("results", {}).values():
            _compact_result(section, keep_identity=False)
    elif name == "research_investigate":
        data.pop("plan", None)
        for item in data.get("hits", ()):
            _prune_hit(item["hit"])
        for item in data.get("dropped", ()):  # why it went is the news; the full JSON keeps the hit
            item["hit"] = {k: item["hit"][k] for k in ("title", "url", "source") if item["hit"].get(k)}
    model = OUTPUT_MODELS[name].model_validate(data)
    dumped: dict[str, Any] = model.model_dump(mode="json", exclude_defaults=True)
    return dumped


def _compact_result(result: dict[str, Any], *, keep_identity: bool) -> None:
    result.pop("returnedCount", None)
    if not keep_identity:
        for key in ("query", "modality", "tier"):
            result.pop(key, None)
    for hit in result.get("hits", ()):
        hit.pop("modality", None)
        if hit.get("source") == result.get("providerInstanceId"):
            hit.pop("source")
        _prune_hit(hit)


def _prune_hit(hit: dict[str, Any]) -> None:
    for key in ("snippet", "source"):
        if not hit.get(key):
            hit.pop(key, None)
    content = hit.get("content")
    content = content if isinstance(content, dict) else {}
    text = content.get("text")
    snippet = hit.get("snippet")
    if text and snippet and text == snippet:
        content.pop("text")  # inline text that is the snippet again (Wikipedia's lead)
        if not content.get("ref"):
            hit.pop("content")
    elif text and snippet and text.startswith(snippet.rstrip("….").rstrip()):
        hit.pop("snippet")  # the snippet is the start of the inline text (OpenAlex's abstract)
    extras = hit.get("extras")
    if isinstance(extras, dict):
        hit["extras"] = {k: v for k, v in extras.items() if v not in (None, "", [], {})}


__all__ = [
    "OUTPUT_MODELS",
    "Attempt",
    "Content",
    "DroppedHit",
    "ModalityResult",
    "ProviderEntry",
    "ProviderList",
    "Quota",
    "RankedHit",
    "RankedHitSet",
    "RichResult",
    "RoutedProfile",
    "SearchHit",
    "SearchResult",
    "SearchRun",
    "compact",
    "output_schema",
]

"""Response models of the views that are no tool's answer: the routing view and the usage report.

They type `GET /v1/_routing` and `GET /v1/usage` in `/openapi.json` (the handlers return plain
JSON; the models document it). Blocks that another layer owns and shapes (`llm`) stay open objects.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ...contract.enums import Modality
from ...tools.outputs import Quota


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True)


class Scope(_Wire):
    tenant: str
    project: str


class RoutingInstance(_Wire):
    """One instance as the loomcycle seed's search block shows it, with its current state."""

    id: str
    protocol: str
    keyable: bool
    available: bool
    selected: bool
    selected_for: list[Modality] = Field(default_factory=list)
    reachable: bool | None = None
    cooldown_until: str | None = None
    quota: Quota | None = None
    last_error: str | None = Field(None, description="Admins only.")


class CascadeStep(_Wire):
    id: str
    gate: str = Field(description="`ready` or the `skipped_*` outcome the dispatcher would record now.")
    selected: bool
    panic: bool = False


class ProfileEntry(_Wire):
    """An agent profile (docs/providers.md, "Agent profiles")."""

    name: str
    providers: list[str] = Field(description="The generic list: every modality it has providers for.")
    modalities: dict[str, list[str]] = Field(description="Per-modality lists (`...providers.<modality>`).")
    sha256: str = Field(description="SHA-256 of the canonical definition (sorted JSON of the lists).")
    level: str = Field(description="The narrowest settings level defining it: system, tenant or project.")


class ProfileList(_Wire):
    profiles: list[ProfileEntry]


class ProfileRouting(ProfileEntry):
    search_cascades: dict[str, list[CascadeStep]] = Field(description="The profile's cascade per modality.")


class RoutingView(_Wire):
    scope: Scope
    search: list[RoutingInstance]
    search_cascades: dict[str, list[CascadeStep]] = Field(description="Per modality, in cascade order.")
    tiers: list[str]
    llm: dict[str, Any] = Field(default_factory=dict, description="`default` and `aliases` resolutions.")
    profile: ProfileRouting | None = Field(None, description="With `?profile=`: that profile's cascades.")


class UsageRow(_Wire):
    instance: str
    protocol: str
    modality: Modality
    calls: int
    hits: int
    failures: int
    p50_ms: float | None = None
    p95_ms: float | None = None
    quota: Quota | None = None


class UsageTotals(_Wire):
    calls: int
    hits: int
    failures: int


class InstanceQuota(_Wire):
    instance: str
    quota: Quota


class ResearchUsage(_Wire):
    since: str
    until: str
    rows: list[UsageRow]
    totals: UsageTotals
    quotas: list[InstanceQuota] = Field(default_factory=list)


class UsageReport(_Wire):
    scope: Scope
    enabled: bool
    message: str | None = Field(None, description="Why there are no figures, when `enabled` is false.")
    research: ResearchUsage | None = None
    llm: dict[str, Any] = Field(default_factory=dict, description="The LLM token dashboard.")


class ResearchPoint(_Wire):
    t: str = Field(description="The bucket's start, UTC.")
    calls: int
    failures: int
    hits: int
    p50_ms: int | None = Field(None, description="Nearest-rank; null when the bucket has no call.")
    p95_ms: int | None = Field(None, description="Nearest-rank; null when the bucket has no call.")


class ResearchTotals(_Wire):
    calls: int
    failures: int
    hits: int
    p50_ms: int | None = None
    p95_ms: int | None = None


class ResearchSeries(_Wire):
    key: dict[str, str | None] = Field(description='`{"instance": "wiki"}` or `{"modality": "WEB"}`.')
    totals: ResearchTotals
    points: list[ResearchPoint] = Field(description="One per bucket, zero-filled.")


class LlmPoint(_Wire):
    t: str = Field(description="The bucket's start, UTC.")
    calls: int
    tokens_input: int
    tokens_output: int
    tokens_total: int
    cost_usd: float = Field(description="Estimated, of the priced calls only.")
    unpriced_calls: int


class LlmTotals(_Wire):
    calls: int
    tokens_input: int
    tokens_output: int
    tokens_total: int
    cost_usd: float
    unpriced_calls: int


class LlmSeries(_Wire):
    key: dict[str, str | None] = Field(
        description='`{"project": …}`, `{"account": …}`, `{"provider": …}` or `{"instance": …, "model": …}`.'
    )
    totals: LlmTotals
    points: list[LlmPoint] = Field(description="One per bucket, zero-filled.")


class _Timeseries(_Wire):
    bucket: Literal["hour", "day"]
    by: str
    since: str = Field(description="The first bucket's start (`since` rounded down to its bucket).")
    until: str
    bucket_count: int
    others_folded: int = Field(description='How many smaller series were summed into "(others)".')


class ResearchTimeseries(_Timeseries):
    kind: Literal["research"]
    scope: Scope
    enabled: bool = Field(True, description="False when this server keeps no audit log (`series` is empty).")
    message: str | None = None
    series: list[ResearchSeries]


class LlmScope(_Wire):
    tenant: str
    project: str | None = None
    account: str | None = None


class LlmTimeseries(_Timeseries):
    kind: Literal["llm"]
    scope: LlmScope
    series: list[LlmSeries]


UsageTimeseries = Annotated[ResearchTimeseries | LlmTimeseries, Field(discriminator="kind")]


__all__ = ["ProfileList", "RoutingView", "UsageReport", "UsageTimeseries"]

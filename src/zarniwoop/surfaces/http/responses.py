"""Response models of the views that are no tool's answer: the routing view and the usage report.

They type `GET /v1/_routing` and `GET /v1/usage` in `/openapi.json` (the handlers return plain
JSON; the models document it). Blocks that another layer owns and shapes (`llm`) stay open objects.
"""

from __future__ import annotations

from typing import Any

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


class RoutingView(_Wire):
    scope: Scope
    search: list[RoutingInstance]
    search_cascades: dict[str, list[CascadeStep]] = Field(description="Per modality, in cascade order.")
    tiers: list[str]
    llm: dict[str, Any] = Field(default_factory=dict, description="`default` and `aliases` resolutions.")


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


__all__ = ["RoutingView", "UsageReport"]

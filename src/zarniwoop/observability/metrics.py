"""Prometheus metrics with the names and labels of DESIGN §10, in Zarniwoop's own registry.

    zarniwoop_research_dispatch_total{modality,tier,outcome}
    zarniwoop_research_provider_calls_total{protocol,instance,modality,outcome}
    zarniwoop_research_provider_duration_seconds{protocol,instance,outcome}      (histogram)
    zarniwoop_research_curated_runs_total{outcome}
    zarniwoop_research_curated_duration_seconds{outcome}                        (histogram)
    zarniwoop_research_quota_lookups_total{instance,modality,source}            source = cache|provider
    zarniwoop_llm_calls_total{provider,instance,purpose,outcome}
    zarniwoop_llm_tokens_total{provider,direction}                              direction = input|output
    zarniwoop_research_cache_lookups_total{outcome}                             outcome = hit|miss
    zarniwoop_research_cache_evictions_total{reason}                            reason = size|expired
    zarniwoop_research_cache_bytes                                              (gauge, this process)

Labels stay low-cardinality: never a tenant, project, query or record id. `instance` is an
operator-chosen endpoint name (`serper-main`), a handful per deployment.

The HTTP surface mounts `render_metrics()` at `GET /metrics`; `zarniwoop metrics` prints it.

    from zarniwoop.observability.metrics import CONTENT_TYPE, render_metrics
    return Response(render_metrics(), media_type=CONTENT_TYPE)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..contract.enums import Outcome

if TYPE_CHECKING:
    from ..contract.protocol import ProviderInstance
    from ..contract.query import SearchRequest
    from ..contract.results import Attempt, SearchResult

REGISTRY = CollectorRegistry(auto_describe=True)
CONTENT_TYPE = CONTENT_TYPE_LATEST

_SECONDS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0)
_CURATED_SECONDS = (0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 60.0, 120.0, 300.0)

DISPATCH = Counter(
    "zarniwoop_research_dispatch",
    "Dispatcher calls by outcome (success, empty, error, disabled, cooldown, exhausted, paced).",
    ["modality", "tier", "outcome"],
    registry=REGISTRY,
)
PROVIDER_CALLS = Counter(
    "zarniwoop_research_provider_calls",
    "Provider instance calls (skips are not calls).",
    ["protocol", "instance", "modality", "outcome"],
    registry=REGISTRY,
)
PROVIDER_DURATION = Histogram(
    "zarniwoop_research_provider_duration_seconds",
    "Duration of provider instance calls.",
    ["protocol", "instance", "outcome"],
    buckets=_SECONDS,
    registry=REGISTRY,
)
CURATED_RUNS = Counter(
    "zarniwoop_research_curated_runs",
    "Curated research pipeline runs (success, plan_failed, evaluate_failed, empty).",
    ["outcome"],
    registry=REGISTRY,
)
CURATED_DURATION = Histogram(
    "zarniwoop_research_curated_duration_seconds",
    "Duration of curated pipeline runs (plan + searches + evaluate).",
    ["outcome"],
    buckets=_CURATED_SECONDS,
    registry=REGISTRY,
)
QUOTA_LOOKUPS = Counter(
    "zarniwoop_research_quota_lookups",
    "Quota status lookups served from the QuotaCache or fetched from the source.",
    ["instance", "modality", "source"],
    registry=REGISTRY,
)
LLM_CALLS = Counter(
    "zarniwoop_llm_calls",
    "LLM calls by provider type, instance, purpose and outcome.",
    ["provider", "instance", "purpose", "outcome"],
    registry=REGISTRY,
)
LLM_TOKENS = Counter(
    "zarniwoop_llm_tokens",
    "LLM tokens by provider type and direction (input, output).",
    ["provider", "direction"],
    registry=REGISTRY,
)

CACHE_LOOKUPS = Counter(
    "zarniwoop_research_cache_lookups",
    "Result cache lookups by outcome (hit, miss); a hit costs no upstream call.",
    ["outcome"],
    registry=REGISTRY,
)
CACHE_EVICTIONS = Counter(
    "zarniwoop_research_cache_evictions",
    "Result cache entries dropped: to stay under research.cache.maxBytes (size) or past their TTL.",
    ["reason"],
    registry=REGISTRY,
)
CACHE_BYTES = Gauge(
    "zarniwoop_research_cache_bytes",
    "Bytes held by this process's result cache (what is stored: compact JSON).",
    registry=REGISTRY,
)
for _outcome in ("hit", "miss"):
    CACHE_LOOKUPS.labels(_outcome)
for _reason in ("size", "expired"):
    CACHE_EVICTIONS.labels(_reason)

CURATED_OUTCOMES = ("success", "plan_failed", "evaluate_failed", "empty")
for _outcome in CURATED_OUTCOMES:  # known label values start at 0, so rate() works from the first run
    CURATED_RUNS.labels(_outcome)
    CURATED_DURATION.labels(_outcome)


def render_metrics() -> bytes:
    """The text exposition of every Zarniwoop metric of this process."""
    return generate_latest(REGISTRY)


def dispatch_outcome(result: SearchResult) -> str:
    """success (hits) · empty (honest empty answer) · error (a provider was called and failed) ·
    exhausted / paced / cooldown / disabled (nothing was called, and why)."""
    if result.hits:
        return "success"
    if result.error_message is None:
        return "empty"
    outcomes = {a.outcome for a in result.attempts}
    if any(not o.is_skip for o in outcomes):
        return "error"
    if Outcome.SKIPPED_EXHAUSTED in outcomes:
        return "exhausted"
    if Outcome.SKIPPED_PACED in outcomes:
        return "paced"
    if Outcome.SKIPPED_COOLDOWN in outcomes:
        return "cooldown"
    return "disabled"


_CHILDREN: dict[tuple[object, ...], Any] = {}


def _child(metric: Any, *labels: str) -> Any:
    """`metric.labels(*labels)`, memoised: prometheus_client validates and locks on every call, and
    the hot path asks for the same few children on every search."""
    key = (id(metric), *labels)
    child = _CHILDREN.get(key)
    if child is None:
        child = _CHILDREN[key] = metric.labels(*labels)
    return child


def record_provider_call(instance: ProviderInstance, request: SearchRequest, attempt: Attempt) -> None:
    """One provider call that ended (a skip is no call: not counted)."""
    if attempt.outcome.is_skip:
        return
    protocol, outcome = instance.protocol.id, attempt.outcome.value
    _child(PROVIDER_CALLS, protocol, instance.id, request.modality.value, outcome).inc()
    _child(PROVIDER_DURATION, protocol, instance.id, outcome).observe(attempt.duration_ms / 1000)


def record_dispatch(request: SearchRequest, result: SearchResult) -> None:
    """One dispatch, by the outcome of its result (`dispatch_outcome`)."""
    _child(DISPATCH, request.modality.value, request.tier.value, dispatch_outcome(result)).inc()


def count_quota_lookup(instance_id: str, modality: str, source: str) -> None:
    _child(QUOTA_LOOKUPS, instance_id, modality, source).inc()


def record_curated_run(outcome: str, seconds: float) -> None:
    """One curated pipeline run: `success`, `plan_failed`, `evaluate_failed` or `empty`.

    started = time.perf_counter()
    ...
    record_curated_run("success" if hits else "empty", time.perf_counter() - started)
    """
    CURATED_RUNS.labels(outcome).inc()
    CURATED_DURATION.labels(outcome).observe(seconds)


def record_llm_call(
    provider: str, instance: str, purpose: str, outcome: str, *, input_tokens: int = 0, output_tokens: int = 0
) -> None:
    """One LLM call (`provider` = wire type such as `openai`, `instance` = the named provider instance)."""
    _child(LLM_CALLS, provider, instance, purpose, outcome).inc()
    if input_tokens:
        _child(LLM_TOKENS, provider, "input").inc(input_tokens)
    if output_tokens:
        _child(LLM_TOKENS, provider, "output").inc(output_tokens)


__all__ = [
    "CONTENT_TYPE",
    "REGISTRY",
    "count_quota_lookup",
    "dispatch_outcome",
    "record_curated_run",
    "record_dispatch",
    "record_llm_call",
    "record_provider_call",
    "render_metrics",
]

"""Prometheus metrics of LLM calls (DESIGN §10 names): low-cardinality labels only — never a
tenant, project, account, key or prompt.

    zarniwoop_llm_calls_total{provider,instance,purpose,outcome}
    zarniwoop_llm_tokens_total{provider,direction}            direction = input | output
"""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY, Counter


def _counter(name: str, documentation: str, labels: tuple[str, ...]) -> Any:
    try:
        return Counter(name, documentation, labels)
    except ValueError:  # already registered (another module of this process made it first)
        return REGISTRY._names_to_collectors[name]  # type: ignore[attr-defined]


LLM_CALLS = _counter(
    "zarniwoop_llm_calls_total",
    "LLM calls by provider, instance, purpose and outcome.",
    ("provider", "instance", "purpose", "outcome"),
)
LLM_TOKENS = _counter(
    "zarniwoop_llm_tokens_total", "LLM tokens by provider and direction.", ("provider", "direction")
)


def observe_call(
    provider: str, instance: str, purpose: str, outcome: str, input_tokens: int, output_tokens: int
) -> None:
    LLM_CALLS.labels(provider, instance, purpose, outcome).inc()
    if input_tokens:
        LLM_TOKENS.labels(provider, "input").inc(input_tokens)
    if output_tokens:
        LLM_TOKENS.labels(provider, "output").inc(output_tokens)

"""Prometheus metrics: DESIGN §10 names and labels, parsed back with prometheus_client's own parser."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from zarniwoop.contract import SearchRequest, SearchScope
from zarniwoop.observability.metrics import REGISTRY, render_metrics
from zarniwoop.surfaces.cli import app

from ..support.bodies import openalex_works
from ..support.emulator import Reply
from ..support.runtime import cascade, endpoint, open_runtime

pytestmark = pytest.mark.anyio

# family name as the parser reports it (counters without `_total`) → label names (DESIGN §10)
RESEARCH = {
    "zarniwoop_research_dispatch": {"modality", "tier", "outcome"},
    "zarniwoop_research_provider_calls": {"protocol", "instance", "modality", "outcome"},
    "zarniwoop_research_provider_duration_seconds": {"protocol", "instance", "outcome"},
    "zarniwoop_research_curated_runs": {"outcome"},
    "zarniwoop_research_curated_duration_seconds": {"outcome"},
    "zarniwoop_research_quota_lookups": {"instance", "modality", "source"},
}
LLM = {
    "zarniwoop_llm_calls": {"provider", "instance", "purpose", "outcome"},
    "zarniwoop_llm_tokens": {"provider", "direction"},
}


def families(text: str):
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(name, labels):
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_metrics_text_parses_and_carries_every_research_metric(tmp_path, emulator):
    emulator.add("/a/works", Reply(status=503))
    emulator.add("/b/works", Reply.json(openalex_works(2)))
    settings = cascade(
        "academic",
        endpoint("m-a", "openalex", f"{emulator.url}/a"),
        endpoint("m-b", "openalex", f"{emulator.url}/b", quota__daily=50),
    )
    calls_b = {"protocol": "openalex", "instance": "m-b", "modality": "ACADEMIC", "outcome": "success"}
    failed_a = {"protocol": "openalex", "instance": "m-a", "modality": "ACADEMIC", "outcome": "hard_error"}
    dispatched = {"modality": "ACADEMIC", "tier": "NORMAL", "outcome": "success"}
    before = (
        value("zarniwoop_research_provider_calls_total", calls_b),
        value("zarniwoop_research_provider_calls_total", failed_a),
        value("zarniwoop_research_dispatch_total", dispatched),
    )
    query = "zebra-plaintext-marker metrics"
    async with await open_runtime(
        tmp_path, settings, tenants={"acme": {"projects": {"secret-project": {}}}}
    ) as rt:
        for i in range(3):
            await rt.dispatcher.search(
                SearchRequest.create(f"{query} {i}", "academic"), SearchScope("acme", "secret-project")
            )
    text = render_metrics().decode()
    parsed = families(text)
    for name in {**RESEARCH, **LLM}:
        assert name in parsed, f"{name} missing from /metrics"
    for name, labels in RESEARCH.items():
        samples = parsed[name].samples
        assert samples, f"{name} has no samples after a few searches"
        for sample in samples:
            assert set(sample.labels) - {"le"} == labels, (name, sample.labels)
    # the figures are the searches just made (3 dispatches; a failed once, then cooling; b served all)
    assert value("zarniwoop_research_provider_calls_total", calls_b) - before[0] == 3
    assert value("zarniwoop_research_provider_calls_total", failed_a) - before[1] == 1
    assert value("zarniwoop_research_dispatch_total", dispatched) - before[2] == 3
    assert (
        value(
            "zarniwoop_research_provider_duration_seconds_count",
            {"protocol": "openalex", "instance": "m-b", "outcome": "success"},
        )
        >= 3
    )
    assert (
        value(
            "zarniwoop_research_quota_lookups_total",
            {"instance": "m-b", "modality": "ACADEMIC", "source": "cache"},
        )
        >= 2
    )
    # low cardinality: no tenant, project, query or id anywhere in the exposition
    all_labels = {k for f in parsed.values() for s in f.samples for k in s.labels}
    assert not all_labels & {"tenant", "project", "query", "id", "tenantId", "projectId"}
    assert "secret-project" not in text and "zebra-plaintext-marker" not in text and "acme" not in text


def test_cli_metrics_prints_parseable_exposition():
    result = CliRunner().invoke(app, ["metrics"])
    assert result.exit_code == 0, result.output
    parsed = families(result.stdout)
    assert set(RESEARCH) | set(LLM) <= set(parsed)
    assert parsed["zarniwoop_research_curated_runs"].type == "counter"
    assert parsed["zarniwoop_research_provider_duration_seconds"].type == "histogram"


def test_curated_and_llm_helpers_feed_their_metrics():
    from zarniwoop.observability.metrics import record_curated_run, record_llm_call

    runs = value("zarniwoop_research_curated_runs_total", {"outcome": "plan_failed"})
    tokens = value("zarniwoop_llm_tokens_total", {"provider": "openai", "direction": "input"})
    record_curated_run("plan_failed", 1.5)
    record_llm_call("openai", "gw-main", "planning", "success", input_tokens=120, output_tokens=30)
    assert value("zarniwoop_research_curated_runs_total", {"outcome": "plan_failed"}) - runs == 1
    assert value("zarniwoop_llm_tokens_total", {"provider": "openai", "direction": "input"}) - tokens == 120
    labels = {"provider": "openai", "instance": "gw-main", "purpose": "planning", "outcome": "success"}
    assert value("zarniwoop_llm_calls_total", labels) >= 1

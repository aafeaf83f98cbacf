"""Traces to a loopback OTLP/HTTP receiver (issue 44): one `research_search` over MCP is one trace —
the MCP SDK's tool span, the search span, a child per attempt (cooldown skip, failure with its
cause, the serving one); a `research_investigate` has a span per pipeline step and GenAI spans for
its LLM calls; the query's plaintext is in no span unless the scope opts in; a `traceparent`
sent with an HTTP request is the parent, and the result's `traceId` and the audit row carry it; a
CLI command's `--json` answer carries its `traceId` (none with tracing off)."""

from __future__ import annotations

import hashlib
import json

import pytest
from fastapi.testclient import TestClient
from mcp import Client

from zarniwoop.contract import SearchScope
from zarniwoop.contract.errors import ProviderHTTPError
from zarniwoop.observability.tracing import TRACING, flush_tracing
from zarniwoop.surfaces.http import create_app
from zarniwoop.surfaces.mcp import build_mcp_server, fixed_principal
from zarniwoop.tenancy.tokens import Principal, TokenStore
from zarniwoop.tools import Toolbox

from ..research.test_llm_pipeline import ANSWERS, QUESTION, providers
from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.llm import ScriptedLlm, Sleeps
from ..support.otlp import OtlpReceiver, children, tracing_to
from ..support.runtime import endpoint, only, open_runtime, write_config

pytestmark = pytest.mark.anyio
QUERY = "aurora over tromsø"
ERROR = 2  # OTLP Status.STATUS_CODE_ERROR


def three_wikis(emulator) -> dict:
    emulator.add("/cold/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("never asked")))
    emulator.add("/bad/w/rest.php/v1/search/page", Reply(status=503))
    emulator.add("/good/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Aurora", "Aurora borealis")))
    return {
        **only(),
        **endpoint("cold", "wikipedia", f"{emulator.url}/cold"),
        **endpoint("bad", "wikipedia", f"{emulator.url}/bad"),
        **endpoint("good", "wikipedia", f"{emulator.url}/good"),
        "research.default.encyclopedia": "cold",
        "research.fallback.encyclopedia": "bad,good",
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.encyclopedia": 0,
    }


def all_values(spans) -> list[str]:
    return [str(v) for s in spans for v in s.attributes.values()] + [s.name for s in spans]


async def traced_mcp_search(tmp_path, emulator, **config) -> tuple[list, dict]:
    with OtlpReceiver() as receiver, tracing_to(receiver):
        async with await open_runtime(tmp_path, three_wikis(emulator), **config) as rt:
            scope = SearchScope("default", "default")
            await rt.dispatcher.cooldowns.record_failure(
                scope, "research:cold:encyclopedia", ProviderHTTPError(503), "HTTP 503", rt.clock.now()
            )
            server = build_mcp_server(Toolbox(rt), fixed_principal(Principal("default", "default", "user")))
            async with Client(server) as client:
                result = await client.call_tool(
                    "research_search", {"query": QUERY, "modality": "encyclopedia"}
                )
            assert flush_tracing()
        return receiver.spans, result.structured_content


async def test_one_mcp_research_search_is_one_trace_with_a_span_per_attempt(tmp_path, emulator):
    spans, structured = await traced_mcp_search(tmp_path, emulator)
    assert not TRACING.on  # off again after the receiver
    [tool] = [s for s in spans if s.name == "tools/call research_search"]
    assert tool.scope == "mcp-python-sdk"  # the SDK's own span, joined, not doubled
    assert tool.attributes["gen_ai.tool.name"] == "research_search"
    assert tool.attributes["zarniwoop.tool"] == "research_search"
    assert tool.attributes["zarniwoop.tenant.id"] == "default"
    others = [s for s in spans if s.trace_id != tool.trace_id]
    assert {s.scope for s in others} == {"mcp-python-sdk"}  # the session's own messages (initialize, …)
    spans = [s for s in spans if s.trace_id == tool.trace_id]  # the tool call's trace
    assert structured["traceId"] == tool.trace_id
    [search] = children(spans, tool)
    assert search.name == "zarniwoop.search"
    assert search.attributes["zarniwoop.query.sha256"] == hashlib.sha256(QUERY.encode()).hexdigest()
    assert search.attributes["zarniwoop.provider.instance"] == "good"
    assert search.attributes["zarniwoop.search.outcome"] == "success"
    assert search.attributes["zarniwoop.cached"] is False
    assert search.attributes["zarniwoop.project.id"] == "default"
    cold, bad, good = children(spans, search)
    assert [s.name for s in (cold, bad, good)] == ["zarniwoop.search.attempt"] * 3
    common = {"zarniwoop.modality": "ENCYCLOPEDIA", "zarniwoop.tier": "NORMAL", "zarniwoop.hedged": False}
    assert {
        k: cold.attributes[k]
        for k in (
            "zarniwoop.provider.instance",
            "zarniwoop.attempt.outcome",
            "zarniwoop.attempt.cooldown_skip",
        )
    } == {
        "zarniwoop.provider.instance": "cold",
        "zarniwoop.attempt.outcome": "skipped_cooldown",
        "zarniwoop.attempt.cooldown_skip": True,
    }
    assert cold.attributes["zarniwoop.cause"] == "cooldown"
    assert cold.start_ns == cold.end_ns  # a skip costs no time
    assert bad.attributes["zarniwoop.attempt.outcome"] == "hard_error"
    assert bad.attributes["zarniwoop.cause"] == "overloaded"  # the result's one-word cause of a 503
    assert bad.attributes["http.response.status_code"] == 503
    assert (bad.status_code, bad.status_message) == (ERROR, "overloaded")
    assert bad.attributes["zarniwoop.provider.protocol"] == "wikipedia"
    assert good.attributes["zarniwoop.attempt.outcome"] == "success"
    assert good.attributes["zarniwoop.hits"] == 2
    assert good.status_code != ERROR
    for attempt in (cold, bad, good):
        assert {k: attempt.attributes[k] for k in common} == common
    assert all(QUERY not in value for value in all_values(spans))  # privacy by default


async def test_a_scope_that_opts_in_gets_the_query_in_its_spans(tmp_path, emulator):
    tenants = {"default": {"settings": {"observability.traces.content": True}}}
    spans, _ = await traced_mcp_search(tmp_path, emulator, tenants=tenants)
    [search] = [s for s in spans if s.name == "zarniwoop.search"]
    assert search.attributes["zarniwoop.query"] == QUERY


async def test_an_investigation_has_a_span_per_step_and_genai_spans_for_its_llm_calls(tmp_path, emulator):
    llm = ScriptedLlm(emulator, ANSWERS)
    with OtlpReceiver() as receiver, tracing_to(receiver):
        async with await open_runtime(tmp_path, {**providers(emulator), **llm.settings()}) as rt:
            (await rt.llm()).clock = Sleeps()
            ranked = await rt.investigator.investigate(QUESTION, SearchScope())
        assert flush_tracing()
    spans = receiver.spans
    [run] = receiver.named("zarniwoop.investigate")
    steps = [s.name for s in children(spans, run)]
    assert steps[0] == "zarniwoop.research.plan"
    assert steps.count("zarniwoop.search") == len(ranked.plan.searches) == 2
    for step in ("dedup", "evaluate", "insights"):
        assert f"zarniwoop.research.{step}" in steps
    [plan] = receiver.named("zarniwoop.research.plan")
    assert plan.attributes["zarniwoop.research.strategy"] == "llm:zarniwoop-research-plan"
    [chat] = children(spans, plan)  # the plan's LLM call, in the GenAI conventions
    assert chat.name == f"chat {llm.model}"
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["gen_ai.request.model"] == llm.model
    assert chat.attributes["gen_ai.usage.input_tokens"] > 0
    assert chat.attributes["zarniwoop.llm.purpose"]
    assert "gen_ai.input.messages" not in chat.attributes  # no opt-in: no prompt
    assert all(QUESTION not in value for value in all_values(spans))


def test_an_incoming_traceparent_is_the_parent_and_the_result_and_audit_row_carry_it(tmp_path, emulator):
    trace_id, parent_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    settings = {
        **three_wikis(emulator),
        "research.default.encyclopedia": "bad",
        "research.fallback.encyclopedia": "good",
        "research.endpoint.good.traceparent": True,  # the operator's own upstream: it joins the trace
    }
    config = write_config(tmp_path, {"settings": settings})
    with OtlpReceiver() as receiver, tracing_to(receiver):
        app = create_app(config=config, home=tmp_path / "home")
        with TestClient(app) as client:
            store = TokenStore(app.state.zarniwoop.runtime.db)
            token = client.portal.call(store.create, "default", "default", "user").token  # type: ignore[union-attr]
            answer = client.post(
                "/v1/research/search",
                json={"query": QUERY, "modality": "encyclopedia"},
                headers={
                    "Authorization": f"Bearer {token}",
                    "traceparent": f"00-{trace_id}-{parent_span}-01",
                },
            )
            assert answer.status_code == 200, answer.text
            runtime = app.state.zarniwoop.runtime
            client.portal.call(runtime.usage.flush)  # type: ignore[union-attr]
            rows = client.portal.call(  # type: ignore[union-attr]
                runtime.db.fetchall,
                "SELECT instance_id, trace_id FROM research_call_records ORDER BY instance_id",
            )
        assert flush_tracing()
    assert answer.json()["traceId"] == trace_id
    assert answer.headers["zarniwoop-trace-id"] == trace_id
    assert [tuple(r) for r in rows] == [("bad", trace_id), ("good", trace_id)]
    spans = receiver.spans
    assert {s.trace_id for s in spans} == {trace_id}
    [http] = [s for s in spans if s.parent_id == parent_span]  # FastAPI's own request span, joined
    assert http.name == "POST /v1/research/search"
    assert http.attributes["http.response.status_code"] == 200
    assert http.attributes["zarniwoop.tool"] == "research_search"
    [search] = children(spans, http)
    assert search.name == "zarniwoop.search"
    # outgoing: only the marked endpoint hears the trace, as a child of its attempt's span
    assert emulator.requests("/bad/w/rest.php/v1/search/page")[0].header("traceparent") is None
    sent = emulator.requests("/good/w/rest.php/v1/search/page")[0].header("traceparent")
    good = next(s for s in children(spans, search) if s.attributes["zarniwoop.provider.instance"] == "good")
    assert sent == f"00-{trace_id}-{good.span_id}-01"


def test_a_cli_command_is_a_span_under_the_environments_traceparent(tmp_path, emulator, monkeypatch):
    from typer.testing import CliRunner

    from zarniwoop.observability.tracing import shutdown_tracing
    from zarniwoop.surfaces.cli import app

    trace_id, parent_span = "5bf92f3577b34da6a3ce929d0e0e4737", "10f067aa0ba902b8"
    config = write_config(
        tmp_path, {"settings": {**three_wikis(emulator), "research.default.encyclopedia": "good"}}
    )
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path / "home"))
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        monkeypatch.setenv("TRACEPARENT", f"00-{trace_id}-{parent_span}-01")
        try:
            result = CliRunner().invoke(
                app, ["--config", str(config), "search", QUERY, "-m", "encyclopedia", "--json"]
            )
        finally:
            shutdown_tracing()
        assert result.exit_code == 0, result.output
        spans = receiver.spans  # the command flushed its spans before it ended
    [command] = [s for s in spans if s.parent_id == parent_span]
    assert (command.name, command.trace_id) == ("zarniwoop search", trace_id)
    [search] = children(spans, command)
    assert search.name == "zarniwoop.search"
    assert search.attributes["zarniwoop.provider.instance"] == "good"


def test_a_cli_search_json_carries_its_trace_id_only_when_tracing_is_on(tmp_path, emulator):
    from zarniwoop.observability.tracing import shutdown_tracing

    from ..support.cli import run_cli

    config = write_config(
        tmp_path, {"settings": {**three_wikis(emulator), "research.default.encyclopedia": "good"}}
    )
    command = ("--config", str(config), "search", QUERY, "-m", "encyclopedia", "--json")
    with OtlpReceiver() as receiver:
        try:
            traced = run_cli(
                *command, home=tmp_path / "home", env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
            )
        finally:
            shutdown_tracing()
        assert traced.code == 0, traced.stderr
        [search] = receiver.named("zarniwoop.search")
        assert {s.trace_id for s in receiver.spans} == {search.trace_id}
    assert json.loads(traced.stdout)["traceId"] == search.trace_id

    untraced = run_cli(*command, home=tmp_path / "home")
    assert untraced.code == 0, untraced.stderr
    assert "traceId" not in json.loads(untraced.stdout)
    assert json.loads(untraced.stdout)["hits"] == json.loads(traced.stdout)["hits"]


def test_a_cli_investigate_json_carries_its_trace_id(tmp_path, emulator):
    from zarniwoop.observability.tracing import shutdown_tracing

    from ..support.cli import run_cli

    emulator.add("/good/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Aurora", "Aurora borealis")))
    config = write_config(
        tmp_path, {"settings": {**only(), **endpoint("good", "wikipedia", f"{emulator.url}/good")}}
    )
    with OtlpReceiver() as receiver:
        try:
            ran = run_cli(
                *("--config", str(config), "investigate", QUESTION, "--json"),
                home=tmp_path / "home",
                env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url},
            )
        finally:
            shutdown_tracing()
        assert ran.code == 0, ran.stderr
        [run] = receiver.named("zarniwoop.investigate")
    assert json.loads(ran.stdout)["traceId"] == run.trace_id


async def test_a_content_fetch_is_a_span_naming_the_host_not_the_url(tmp_path, emulator):
    emulator.add("/private/path", Reply(body=b"a body", headers={"Content-Type": "text/plain"}))
    with OtlpReceiver() as receiver, tracing_to(receiver):
        async with await open_runtime(tmp_path, {**only(), "research.content.allowPrivate": True}) as rt:
            loaded = await rt.content.fetch_url(f"{emulator.url}/private/path?q=secret", SearchScope())
            await rt.content.aclose()
        assert flush_tracing()
    [fetch] = receiver.named("zarniwoop.content.fetch")
    assert fetch.attributes["server.address"] == "127.0.0.1"
    assert fetch.attributes["zarniwoop.content.kind"] == "url"
    assert fetch.attributes["zarniwoop.content.bytes"] == loaded.size == 6
    assert all("secret" not in value and "/private" not in value for value in all_values([fetch]))

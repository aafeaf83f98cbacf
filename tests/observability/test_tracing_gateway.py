"""The gateway's calls as GenAI spans (issue 44): one chat completion and one streamed completion
through `POST /v1/chat/completions`, each a `chat <model>` span under FastAPI's request span with
the token counts the emulated upstream reported, the caller's `traceparent` as the trace."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from zarniwoop.observability.tracing import flush_tracing
from zarniwoop.surfaces.http import create_app

from ..support.emulator import Reply
from ..support.gateway import openai_completion, openai_text_stream, prepare_gateway, upstream_path
from ..support.otlp import OtlpReceiver, children, tracing_to

TRACE_ID, PARENT = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
PROMPT = "a prompt nobody else may read"


def chat(client: TestClient, token: str, **body) -> object:
    return client.post(
        "/v1/chat/completions",
        json={"model": "openai:gpt-4o-mini", "messages": [{"role": "user", "content": PROMPT}], **body},
        headers={"Authorization": f"Bearer {token}", "traceparent": f"00-{TRACE_ID}-{PARENT}-01"},
    )


def test_chat_and_stream_calls_are_genai_spans_with_the_upstreams_token_counts(tmp_path, emulator):
    setup = prepare_gateway(tmp_path, emulator)
    with OtlpReceiver() as receiver, tracing_to(receiver):
        app = create_app(config=setup.config, home=setup.home)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            emulator.add(upstream_path("openai"), openai_completion("Fine.", 17, 5))
            answer = chat(client, setup.token)
            assert answer.status_code == 200, answer.text
            assert answer.headers["zarniwoop-trace-id"] == TRACE_ID
            emulator.reset()
            stream = openai_text_stream("streamed words here", (21, 9))
            emulator.add(
                upstream_path("openai"), Reply(body=stream, headers={"Content-Type": "text/event-stream"})
            )
            streamed = chat(client, setup.token, stream=True, stream_options={"include_usage": True})
            assert streamed.status_code == 200 and "streamed" in streamed.text
        assert flush_tracing()
    spans = [s for s in receiver.spans if s.trace_id == TRACE_ID]
    requests = sorted((s for s in spans if s.parent_id == PARENT), key=lambda s: s.start_ns)
    assert [r.name for r in requests] == ["POST /v1/chat/completions"] * 2
    calls = [[c for c in children(spans, r) if c.name.startswith("chat ")] for r in requests]
    (plain,), (streamed_call,) = calls
    for span, tokens in ((plain, (17, 5)), (streamed_call, (21, 9))):
        attributes = span.attributes
        assert span.name == "chat gpt-4o-mini"
        assert span.kind == 3  # CLIENT
        assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == tokens
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert attributes["gen_ai.response.model"] == "gpt-4o-mini"
        assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
        assert attributes["zarniwoop.credential_source"] == "account"
        assert attributes["zarniwoop.tenant.id"] == "acme"
        assert attributes["zarniwoop.account.id"] == "mike"
        assert attributes["zarniwoop.cost_usd"] > 0
        assert attributes["zarniwoop.budget.level"] in ("tenant", "team", "project", "account")
        [attempt] = children(spans, span)
        assert attempt.attributes["zarniwoop.llm.attempt.outcome"] == "ok"
        assert attempt.attributes["zarniwoop.llm.instance"] == "openai"
    text = json.dumps([s.attributes for s in spans])
    assert PROMPT not in text and "Fine." not in text  # no opt-in: neither prompt nor completion


def test_a_tenant_that_opts_in_gets_prompt_and_completion_in_its_genai_span(tmp_path, emulator):
    from ..support.gateway import gateway_tenants

    tenants = gateway_tenants(emulator)
    tenants["acme"]["settings"]["observability.traces.content"] = True
    setup = prepare_gateway(tmp_path, emulator, tenants=tenants)
    with OtlpReceiver() as receiver, tracing_to(receiver):
        app = create_app(config=setup.config, home=setup.home)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            emulator.add(upstream_path("openai"), openai_completion("Fine.", 17, 5))
            assert chat(client, setup.token).status_code == 200
        assert flush_tracing()
    [call] = [
        s for s in receiver.spans if "gen_ai.usage.input_tokens" in s.attributes
    ]  # the call, not its attempt
    assert json.loads(call.attributes["gen_ai.input.messages"]) == [{"role": "user", "content": PROMPT}]
    assert json.loads(call.attributes["gen_ai.output.messages"]) == [
        {"role": "assistant", "content": "Fine."}
    ]


def test_an_llm_instance_marked_traceparent_gets_the_calls_trace_and_a_vendor_gets_none(tmp_path, emulator):
    from ..support.gateway import gateway_tenants, openai_upstream

    marked = gateway_tenants(emulator)
    marked["acme"]["settings"]["ai.provider.openai.traceparent"] = True  # the operator's own upstream
    sent: dict[str, list[str | None]] = {}
    for name, tenants in (("marked", marked), ("unmarked", gateway_tenants(emulator))):
        (tmp_path / name).mkdir()
        setup = prepare_gateway(tmp_path / name, emulator, tenants=tenants)
        emulator.reset()
        emulator.add(upstream_path("openai"), openai_upstream)
        with OtlpReceiver() as receiver, tracing_to(receiver):
            app = create_app(config=setup.config, home=setup.home)
            with TestClient(app, base_url="http://127.0.0.1") as client:
                assert chat(client, setup.token).status_code == 200
                assert chat(client, setup.token, stream=True).status_code == 200
        sent[name] = [r.header("traceparent") for r in emulator.requests(upstream_path("openai"))]
    assert sent["unmarked"] == [None, None]
    for carried in sent["marked"]:  # plain and streamed: the caller's trace, a span of ours as parent
        version, trace_id, parent, flags = str(carried).split("-")
        assert (version, trace_id, flags) == ("00", TRACE_ID, "01") and parent != PARENT and len(parent) == 16

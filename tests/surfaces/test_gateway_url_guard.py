"""The OpenAI-compatible gateway runs on the LLM call path, so a tenant's `ai.provider.openai.baseUrl`
at a loopback address (an old row, written straight to the store) is refused by the SSRF guard there
too — plain and streamed — and nothing reaches the upstream; with the operator's
`research.allowPrivateEndpoints: true` the same row is called."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from zarniwoop.surfaces.http import create_app

from ..support.emulator import Emulator
from ..support.gateway import openai_completion
from ..support.llm import ALLOW_LOOPBACK
from ..support.runtime import only, write_config

KEY = "sk-MIKE-openai-own-0123456789"
BODY = {"model": "openai:gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


def _tenants() -> dict[str, Any]:
    entry = {"provider": "openai", "model": "gpt-4o-mini", "api_key_ref": "cred_mike_openai"}
    policy = {"max_retries": 0, "retry_delay_ms": 0, "fallback_enabled": False, "fallback_to_local": False}
    return {
        "acme": {
            "accounts": {"mike": {"llm": {"providers": [entry], "failover": policy}}},
            "projects": {"p1": {}},
        }
    }


def _gateway(
    tmp_path, emulator: Emulator, system: dict[str, Any]
) -> Iterator[tuple[TestClient, dict[str, str]]]:
    config = write_config(tmp_path, {"settings": {**only(), **system}, "tenants": _tenants()})
    app = create_app(config=config, home=tmp_path / "home")
    with TestClient(app, raise_server_exceptions=False) as client:
        runtime = app.state.zarniwoop.runtime
        portal = client.portal
        assert portal is not None
        portal.call(lambda: runtime.credentials.set("acme", "account", "mike", "cred_mike_openai", KEY))
        # an old row: written straight to the store, past the write-time check
        portal.call(
            lambda: runtime.settings.set(
                "acme", "_tenant", "ai.provider.openai.baseUrl", emulator.url + "/v1"
            )
        )
        token = portal.call(lambda: runtime.tokens.create("acme", "p1", "user", account="mike")).token
        yield client, {"Authorization": f"Bearer {token}"}


@pytest.fixture
def refusing(tmp_path, emulator):
    yield from _gateway(tmp_path, emulator, {})


@pytest.fixture
def allowing(tmp_path, emulator):
    yield from _gateway(tmp_path, emulator, dict(ALLOW_LOOPBACK))


def test_the_gateway_refuses_a_tenant_base_url_at_loopback(refusing, emulator):
    emulator.add("/v1/chat/completions", openai_completion("hello", 5, 1))
    client, headers = refusing
    answer = client.post("/v1/chat/completions", headers=headers, json=BODY)
    assert answer.status_code == 502
    error = answer.json()["error"]
    assert error["code"] == "upstream_failed"
    assert (
        "openai: endpoint refused" in error["message"]
        and "127.0.0.1 is a loopback address" in error["message"]
    )
    streamed = client.post("/v1/chat/completions", headers=headers, json={**BODY, "stream": True})
    assert (
        streamed.status_code == 502
        and "127.0.0.1 is a loopback address" in streamed.json()["error"]["message"]
    )
    assert emulator.requests() == []


def test_with_the_system_switch_the_gateway_calls_the_tenant_url(allowing, emulator):
    emulator.add("/v1/chat/completions", openai_completion("hello", 5, 1))
    client, headers = allowing
    answer = client.post("/v1/chat/completions", headers=headers, json=BODY)
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "hello"
    [request] = emulator.requests("/v1/chat/completions")
    assert request.header("authorization") == f"Bearer {KEY}"

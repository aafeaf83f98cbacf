"""A tenant's or a project's `ai.provider.<instance>.baseUrl` is an untrusted target (docs/security.md):
every LLM call to it — chat, streaming, discovery's listing — passes the search transport's SSRF
guard (the address checked after DNS resolution), unless the operator sets
`research.allowPrivateEndpoints: true` at system level; its error bodies are summarised. A base URL
the operator set at system level is trusted. The rows are written straight into the settings store,
as an old row that predates the write-time check would be. Real HTTP against the loopback emulator."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from zarniwoop import operations
from zarniwoop.contract import SearchScope
from zarniwoop.contract.errors import NoProviderAvailableError
from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.call import LlmCall
from zarniwoop.runtime import Runtime

from ..support.emulator import Reply
from ..support.llm import ALLOW_LOOPBACK, ANTHROPIC_PATH, Sleeps, anthropic_reply, manager_for
from ..support.runtime import write_config

pytestmark = pytest.mark.anyio

TENANT_KEY = "sk-ant-TENANT-OWN-7777"
OPERATOR_KEY = "sk-ant-OPERATOR-ENV-8888"
MODEL = "claude-sonnet-4-5"
CALL = LlmCall("acme", "p1", "mike", model=f"anthropic:{MODEL}")
SECRET_BODY = b'{"error": {"type": "internal", "message": "admin console: db password hunter2"}}'


async def _open(tmp_path, system: dict[str, Any] | None = None) -> Runtime:
    config = {
        "settings": system or {},
        "tenants": {"acme": {"accounts": {"mike": {}}, "projects": {"p1": {}}}},
    }
    runtime = await Runtime.open(write_config(tmp_path, config), home=tmp_path / "home")
    # the tenant's key as its admin stores it (a stored row: the tests delete it where they need none)
    await runtime.settings.set("acme", "_tenant", "ai.provider.anthropic.apiKey", TENANT_KEY)
    return runtime


async def _tenant_row(runtime: Runtime, key: str, value: str, project: str = "_tenant") -> None:
    """A row as an older version (or a direct database write) left it: no write-time check."""
    await runtime.settings.set("acme", project, key, value)
    await runtime.settings.refresh()


async def _only_ollama(runtime: Runtime) -> None:
    """Discovery tests list ollama alone (the tenant's anthropic key would list the vendor's API)."""
    await runtime.settings.delete("acme", "_tenant", "ai.provider.anthropic.apiKey")
    await runtime.settings.refresh()


async def _manager(runtime: Runtime):
    manager = await manager_for(runtime, Sleeps(), environ={"ANTHROPIC_API_KEY": OPERATOR_KEY})
    manager._catalog = None  # cost is not what this test is about
    return manager


async def test_a_tenant_llm_base_url_at_loopback_is_refused_at_call_time(tmp_path, emulator) -> None:
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    async with await _open(tmp_path) as runtime:
        await _tenant_row(runtime, "ai.provider.anthropic.baseUrl", emulator.url)
        manager = await _manager(runtime)
        with pytest.raises(NoProviderAvailableError) as caught:
            await manager.chat(CALL, ChatRequest.prompt("hi"))
        message = caught.value.message
        assert "endpoint refused" in message
        assert "127.0.0.1 is a loopback address" in message
        assert "research.allowPrivateEndpoints" in message
        with pytest.raises(NoProviderAvailableError) as streamed:
            async for _ in manager.stream(CALL, ChatRequest.prompt("hi", stream=True)):
                pass
        assert "127.0.0.1 is a loopback address" in streamed.value.message
        assert emulator.requests() == []  # nothing reached the emulator, not even a connection


async def test_a_project_llm_base_url_is_guarded_too(tmp_path, emulator) -> None:
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    async with await _open(tmp_path) as runtime:
        await _tenant_row(runtime, "ai.provider.anthropic.baseUrl", emulator.url, project="p1")
        manager = await _manager(runtime)
        with pytest.raises(NoProviderAvailableError) as caught:
            await manager.chat(CALL, ChatRequest.prompt("hi"))
        assert "127.0.0.1 is a loopback address" in caught.value.message
        assert emulator.requests() == []


async def test_with_the_system_switch_a_tenant_url_is_called_with_its_own_key(tmp_path, emulator) -> None:
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    async with await _open(tmp_path, dict(ALLOW_LOOPBACK)) as runtime:
        await _tenant_row(runtime, "ai.provider.anthropic.baseUrl", emulator.url)
        manager = await _manager(runtime)
        result = await manager.chat(CALL, ChatRequest.prompt("hi"))
        assert result.credential_source == "tenant"
        [request] = emulator.requests(ANTHROPIC_PATH)
        assert request.header("x-api-key") == TENANT_KEY  # never the operator's key


async def test_a_tenant_urls_error_body_is_summarised_not_reflected(tmp_path, emulator) -> None:
    emulator.add(ANTHROPIC_PATH, Reply(status=500, body=SECRET_BODY))
    async with await _open(tmp_path, dict(ALLOW_LOOPBACK)) as runtime:
        await _tenant_row(runtime, "ai.provider.anthropic.baseUrl", emulator.url)
        manager = await _manager(runtime)
        with pytest.raises(NoProviderAvailableError) as caught:
            await manager.chat(CALL, ChatRequest.prompt("hi"))
        assert "anthropic: HTTP 500 Internal Server Error" in caught.value.message
        assert "hunter2" not in caught.value.message
        with pytest.raises(NoProviderAvailableError) as streamed:
            async for _ in manager.stream(CALL, ChatRequest.prompt("hi", stream=True)):
                pass
        assert "HTTP 500 Internal Server Error" in streamed.value.message
        assert "hunter2" not in streamed.value.message
        assert len(emulator.requests(ANTHROPIC_PATH)) >= 2


async def test_a_public_name_resolving_to_loopback_is_refused_after_resolution(tmp_path, emulator) -> None:
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    port = int(emulator.url.rsplit(":", 1)[1])
    asked: list[str] = []

    async def resolver(host: str, _port: int) -> list[Any]:
        asked.append(host)
        return [ipaddress.ip_address("127.0.0.1")]

    async with await _open(tmp_path) as runtime:
        runtime.transport.resolver = resolver  # the guard's resolver: no DNS in the sandbox
        await _tenant_row(runtime, "ai.provider.anthropic.baseUrl", f"http://llm.example.org:{port}")
        manager = await _manager(runtime)
        with pytest.raises(NoProviderAvailableError) as caught:
            await manager.chat(CALL, ChatRequest.prompt("hi"))
        assert "llm.example.org resolves to 127.0.0.1, which is a loopback address" in caught.value.message
        assert set(asked) == {"llm.example.org"}  # checked on every attempt
        assert emulator.requests() == []
        # The same guarded path connects to the checked address when the policy allows it (the
        # test declares the emulator's port public), keeping the name in the Host header.
        runtime.transport.address_allowed = lambda address, allowed_port: allowed_port == port
        result = await manager.chat(CALL, ChatRequest.prompt("hi"))
        assert result.credential_source == "tenant"
        [request] = emulator.requests(ANTHROPIC_PATH)
        assert request.header("host") == f"llm.example.org:{port}"


async def test_a_system_level_llm_base_url_at_loopback_is_the_operators(tmp_path, emulator) -> None:
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    async with await _open(tmp_path, {"ai.provider.anthropic.baseUrl": emulator.url}) as runtime:
        # no tenant key: the operator's key follows the operator's own URL
        await runtime.settings.delete("acme", "_tenant", "ai.provider.anthropic.apiKey")
        await runtime.settings.refresh()
        manager = await _manager(runtime)
        result = await manager.chat(CALL, ChatRequest.prompt("hi"))
        assert result.credential_source == "operator"
        [request] = emulator.requests(ANTHROPIC_PATH)
        assert request.header("x-api-key") == OPERATOR_KEY


def _ollama_listing() -> Reply:
    return Reply.json({"models": [{"name": "llama3.2:latest", "model": "llama3.2:latest"}]})


async def test_discovery_of_a_tenant_instance_at_loopback_is_refused(tmp_path, emulator) -> None:
    emulator.add("/tenant-ollama/api/tags", _ollama_listing())
    emulator.add("/ops-ollama/api/tags", _ollama_listing())
    async with await _open(tmp_path, {"ai.provider.ollama.baseUrl": emulator.url + "/ops-ollama"}) as runtime:
        await _only_ollama(runtime)
        await _tenant_row(runtime, "ai.provider.ollama.baseUrl", emulator.url + "/tenant-ollama")
        report = await operations.discover_models(runtime, None)
        scopes = {(s["tenant"], s["project"]): s for s in report["scopes"]}
        [skipped] = scopes[("acme", "_tenant")]["skippedInstances"]
        assert skipped["instance"] == "ollama"
        assert (
            "endpoint refused" in skipped["error"] and "127.0.0.1 is a loopback address" in skipped["error"]
        )
        assert [i["instance"] for i in scopes[("_system", "_tenant")]["instances"]] == ["ollama"]
        assert emulator.requests("/tenant-ollama/api/tags") == []
        assert len(emulator.requests("/ops-ollama/api/tags")) == 1  # the operator's URL is listed


async def test_discovery_of_a_tenant_instance_with_the_switch_lists_it(tmp_path, emulator) -> None:
    emulator.add("/tenant-ollama/api/tags", _ollama_listing())
    async with await _open(tmp_path, dict(ALLOW_LOOPBACK)) as runtime:
        await _only_ollama(runtime)
        await _tenant_row(runtime, "ai.provider.ollama.baseUrl", emulator.url + "/tenant-ollama")
        report = await operations.discover_models(runtime, SearchScope("acme", "_tenant"))
        [scope] = report["scopes"]
        assert [(i["instance"], i["models"]) for i in scope["instances"]] == [("ollama", 1)]
        assert len(emulator.requests("/tenant-ollama/api/tags")) == 1


async def test_a_tenant_row_cannot_lift_the_operators_operator_keys_deny(tmp_path, emulator) -> None:
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    system = {
        "ai.provider.anthropic.baseUrl": emulator.url,
        "ai.operatorKeys": "deny",
        "research.operatorKeys": "deny",
    }
    async with await _open(tmp_path, system) as runtime:
        await runtime.settings.delete("acme", "_tenant", "ai.provider.anthropic.apiKey")
        for key in ("ai.operatorKeys", "research.operatorKeys"):
            await _tenant_row(runtime, key, "allow")
            await _tenant_row(runtime, key, "allow", project="p1")
            for project in ("_tenant", "p1"):
                scoped = runtime.settings.scoped(SearchScope("acme", project))
                assert scoped.get(key) == "deny" and scoped.row(key).level == "system"  # type: ignore[union-attr]
        manager = await _manager(runtime)
        with pytest.raises(NoProviderAvailableError) as caught:
            await manager.chat(CALL, ChatRequest.prompt("hi"))
        assert "operator keys denied" in caught.value.message
        assert emulator.requests() == []
        # A tenant may still deny for itself where the operator allows.
        await runtime.settings.set("_system", "_tenant", "ai.operatorKeys", "allow")
        await runtime.settings.delete("acme", "p1", "ai.operatorKeys")
        await _tenant_row(runtime, "ai.operatorKeys", "deny")
        assert runtime.settings.scoped(SearchScope("acme", "p1")).get("ai.operatorKeys") == "deny"
        await _tenant_row(runtime, "ai.operatorKeys", "allow")
        result = await manager.chat(CALL, ChatRequest.prompt("hi"))
        assert result.credential_source == "operator"
        assert emulator.requests(ANTHROPIC_PATH)[0].header("x-api-key") == OPERATOR_KEY

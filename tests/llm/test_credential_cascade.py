"""`credential_source` for each level of the cascade (seed 002 §3: account → project → team →
tenant → local), the operator's environment after the tenant's own keys, and `ai.operatorKeys: deny`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from zarniwoop.contract.errors import NoProviderAvailableError
from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.manager import LlmCall
from zarniwoop.runtime import Runtime

from ..support.emulator import Reply
from ..support.llm import ALLOW_LOOPBACK, ANTHROPIC_PATH, anthropic_reply, manager_for
from ..support.paths import fixture_bytes
from ..support.runtime import write_config

pytestmark = pytest.mark.anyio

ENV_KEY = "sk-ant-OPERATOR-ENV-9999"
K = {
    "account": "sk-ant-ACCOUNT-1111",
    "project": "sk-ant-PROJECT-2222",
    "team": "sk-ant-TEAM-3333",
    "tenant": "sk-ant-TENANT-4444",
    "setting-tenant": "sk-ant-SETTING-TENANT-5555",
    "setting-project": "sk-ant-SETTING-PROJECT-6666",
}
MODEL = "claude-sonnet-4-5"


def entry(ref: str, model: str | None = MODEL, **kw: Any) -> dict[str, Any]:
    return {"provider": "anthropic", **({"model": model} if model else {}), "api_key_ref": ref, **kw}


@dataclass
class Case:
    name: str
    account: list = field(default_factory=list)
    project: list = field(default_factory=list)
    team: list = field(default_factory=list)
    tenant: list = field(default_factory=list)
    tenant_settings: dict = field(default_factory=dict)
    project_settings: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    stored: tuple = ("account", "project", "team", "tenant")
    """Which levels' credentials exist in the store."""
    extra: dict = field(default_factory=dict)
    """More stored account-level credentials: name → value."""
    expect_source: str = ""
    expect_key: str | None = None


CASES = [
    Case(
        "account key first",
        account=[entry("k_acc")],
        project=[entry("k_proj")],
        team=[entry("k_team", None)],
        tenant=[entry("k_ten")],
        env={"ANTHROPIC_API_KEY": ENV_KEY},
        expect_source="account",
        expect_key=K["account"],
    ),
    Case(
        "project when the account has none",
        project=[entry("k_proj")],
        team=[entry("k_team", None)],
        tenant=[entry("k_ten")],
        expect_source="project",
        expect_key=K["project"],
    ),
    Case(
        "team when account and project have none",
        team=[entry("k_team", None)],
        tenant=[entry("k_ten")],
        expect_source="team",
        expect_key=K["team"],
    ),
    Case(
        "tenant entry",
        tenant=[entry("k_ten")],
        env={"ANTHROPIC_API_KEY": ENV_KEY},
        expect_source="tenant",
        expect_key=K["tenant"],
    ),
    Case(
        "an account entry for another model still gives the account's vendor key",
        account=[entry("k_acc", "claude-opus-4-5")],
        project=[entry("k_proj")],
        expect_source="account",
        expect_key=K["account"],
    ),
    Case(
        "within a level the entry naming the model wins",
        account=[entry("k_other", "claude-opus-4-5"), entry("k_acc")],
        project=[entry("k_proj")],
        extra={"k_other": "sk-ant-OTHER-8888"},
        expect_source="account",
        expect_key=K["account"],
    ),
    Case(
        "a ref missing from the store falls through",
        account=[entry("k_acc")],
        team=[entry("k_team", None)],
        stored=("team",),
        expect_source="team",
        expect_key=K["team"],
    ),
    Case(
        "tenant setting ai.provider.anthropic.apiKey",
        tenant_settings={"ai.provider.anthropic.apiKey": K["setting-tenant"]},
        env={"ANTHROPIC_API_KEY": ENV_KEY},
        expect_source="tenant",
        expect_key=K["setting-tenant"],
    ),
    Case(
        "project setting ai.provider.anthropic.apiKey",
        project_settings={"ai.provider.anthropic.apiKey": K["setting-project"]},
        tenant_settings={"ai.provider.anthropic.apiKey": K["setting-tenant"]},
        expect_source="project",
        expect_key=K["setting-project"],
    ),
    Case(
        "operator environment last",
        env={"ANTHROPIC_API_KEY": ENV_KEY},
        expect_source="operator",
        expect_key=ENV_KEY,
    ),
]


def config(case: Case, emulator) -> dict[str, Any]:
    return {
        # The operator points the anthropic instance at the emulator at the system level, so the
        # operator's own key may go there (a tenant-level baseUrl would not get it).
        "settings": {
            **ALLOW_LOOPBACK,  # a case's tenant-level baseUrl is the emulator's too
            "ai.provider.anthropic.baseUrl": emulator.url,
            "ai.provider.ollama.baseUrl": emulator.url + "/local",
        },
        "tenants": {
            "acme": {
                "settings": case.tenant_settings,
                "llm": {"providers": case.tenant} if case.tenant else {},
                "teams": {"nlp": {"llm": {"providers": case.team} if case.team else {}}},
                "accounts": {
                    "mike": {"teams": ["nlp"], "llm": {"providers": case.account} if case.account else {}}
                },
                "projects": {
                    "p1": {
                        "team": "nlp",
                        "settings": case.project_settings,
                        "llm": {"providers": case.project} if case.project else {},
                    }
                },
            }
        },
    }


async def open_case(tmp_path, case: Case, emulator) -> Runtime:
    runtime = await Runtime.open(write_config(tmp_path, config(case, emulator)), home=tmp_path / "home")
    store = runtime.credentials
    owners = {"account": "mike", "project": "p1", "team": "nlp", "tenant": None}
    refs = {"account": "k_acc", "project": "k_proj", "team": "k_team", "tenant": "k_ten"}
    for level in case.stored:
        await store.set("acme", level, owners[level], refs[level], K[level])
    for name, value in case.extra.items():
        await store.set("acme", "account", "mike", name, value)
    return runtime


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_credential_source_per_level(tmp_path, emulator, case: Case) -> None:
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    async with await open_case(tmp_path, case, emulator) as runtime:
        manager = await manager_for(runtime, environ=case.env)
        manager._catalog = None  # cost is not what this test is about
        result = await manager.chat(
            LlmCall("acme", "p1", "mike", model=f"anthropic:{MODEL}"), ChatRequest.prompt("hi")
        )
        assert result.credential_source == case.expect_source
        assert emulator.requests(ANTHROPIC_PATH)[-1].header("x-api-key") == case.expect_key
        row = await runtime.db.fetchone("SELECT credential_source FROM llm_usage_records")
        assert row == (case.expect_source,)


async def test_local_server_needs_no_key(tmp_path, emulator) -> None:
    emulator.add("/local/api/chat", Reply(body=fixture_bytes("llm", "ollama", "api-chat.json")))
    async with await open_case(tmp_path, Case("local"), emulator) as runtime:
        manager = await manager_for(runtime, environ={"ANTHROPIC_API_KEY": ENV_KEY})
        manager._catalog = None
        result = await manager.chat(
            LlmCall("acme", "p1", "mike", model="ollama:llama3.2"), ChatRequest.prompt("hi")
        )
        assert result.credential_source == "local"
        assert result.response.text == "Hello! How are you today?"
        assert emulator.requests("/local/api/chat")[0].header("authorization") is None


async def test_operator_keys_deny_never_uses_the_environment_key(tmp_path, emulator) -> None:
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    case = Case("deny", tenant_settings={"ai.operatorKeys": "deny"})
    async with await open_case(tmp_path, case, emulator) as runtime:
        manager = await manager_for(runtime, environ={"ANTHROPIC_API_KEY": ENV_KEY})
        manager._catalog = None
        with pytest.raises(NoProviderAvailableError) as caught:
            await manager.chat(
                LlmCall("acme", "p1", "mike", model=f"anthropic:{MODEL}"), ChatRequest.prompt("hi")
            )
        assert "operator keys denied" in caught.value.message
        assert caught.value.exit_code == 4  # issue 15: a missing key is exit 4, never a silent substitute
        assert emulator.requests(ANTHROPIC_PATH) == []
        # Another tenant without the restriction does use the operator's key.
        other = await manager.chat(
            LlmCall("beta", "default", "ann", model=f"anthropic:{MODEL}"), ChatRequest.prompt("hi")
        )
        assert other.credential_source == "operator"
        assert emulator.requests(ANTHROPIC_PATH)[0].header("x-api-key") == ENV_KEY


async def test_operator_keys_deny_with_the_tenants_own_key_uses_only_that(tmp_path, emulator) -> None:
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    case = Case("deny+own", tenant=[entry("k_ten")], tenant_settings={"ai.operatorKeys": "deny"})
    async with await open_case(tmp_path, case, emulator) as runtime:
        manager = await manager_for(runtime, environ={"ANTHROPIC_API_KEY": ENV_KEY})
        manager._catalog = None
        result = await manager.chat(
            LlmCall("acme", "p1", "mike", model=f"anthropic:{MODEL}"), ChatRequest.prompt("hi")
        )
        assert result.credential_source == "tenant"
        assert [r.header("x-api-key") for r in emulator.requests(ANTHROPIC_PATH)] == [K["tenant"]]


async def test_a_tenant_base_url_never_receives_the_operator_key(tmp_path, emulator) -> None:
    emulator.add("/tenant-proxy" + ANTHROPIC_PATH, anthropic_reply())
    case = Case("own url", tenant_settings={"ai.provider.anthropic.baseUrl": emulator.url + "/tenant-proxy"})
    async with await open_case(tmp_path, case, emulator) as runtime:
        manager = await manager_for(runtime, environ={"ANTHROPIC_API_KEY": ENV_KEY})
        manager._catalog = None
        with pytest.raises(NoProviderAvailableError):
            await manager.chat(
                LlmCall("acme", "p1", "mike", model=f"anthropic:{MODEL}"), ChatRequest.prompt("hi")
            )
        assert emulator.requests() == []


@pytest.mark.parametrize("header", ["anthropic-workspace-id", "anthropic-user-profile-id"])
async def test_a_workspace_header_rides_only_a_key_of_the_callers_own(tmp_path, emulator, header) -> None:
    """`/v1/messages` forwards the SDK's `workspace_id`/`user_profile_id` headers to Anthropic: with
    the account's own key they go as sent; on the operator's key they would choose a workspace inside
    the operator's organisation — refused, naming the header, before any byte leaves, the hold given back."""
    from zarniwoop.contract.errors import InvalidRequestError
    from zarniwoop.surfaces.http.anthropic_wire import MessagesRequest, parse_body, to_chat_request

    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    raw = b'{"model": "anthropic:claude-sonnet-4-5", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}'
    request = to_chat_request(*parse_body(raw, MessagesRequest), {header: "wrkspc_01"})
    call = LlmCall("acme", "p1", "mike", model=f"anthropic:{MODEL}")
    async with await open_case(tmp_path, Case("operator"), emulator) as runtime:
        manager = await manager_for(runtime, environ={"ANTHROPIC_API_KEY": ENV_KEY})
        manager._catalog = None
        with pytest.raises(InvalidRequestError) as caught:
            await manager.chat(call, request)
        assert caught.value.field == header
        assert "operator's key" in caught.value.reason
        assert emulator.requests(ANTHROPIC_PATH) == []
        assert await runtime.db.fetchone("SELECT COUNT(*) FROM llm_quota_holds") == (0,)
    (own := tmp_path / "own").mkdir()
    async with await open_case(own, Case("own", account=[entry("k_acc")]), emulator) as runtime:
        manager = await manager_for(runtime, environ={"ANTHROPIC_API_KEY": ENV_KEY})
        manager._catalog = None
        result = await manager.chat(call, request)
        assert result.credential_source == "account"
        sent = emulator.requests(ANTHROPIC_PATH)
        assert [(r.header(header), r.header("x-api-key")) for r in sent] == [("wrkspc_01", K["account"])]


async def test_a_plan_kept_between_calls_follows_the_keys_it_was_built_from(tmp_path, emulator) -> None:
    """The cascade's plan is kept for the next call of the same scope and spec (`prepare.CallMemory`)
    only while the operator variables it read and the credential store are as they were."""
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    case = Case("memory", account=[entry("k_acc")], stored=())
    async with await open_case(tmp_path, case, emulator) as runtime:
        manager = await manager_for(runtime, environ={"ANTHROPIC_API_KEY": ENV_KEY})
        manager._catalog = None
        call = LlmCall("acme", "p1", "mike", model=f"anthropic:{MODEL}")
        sources = [(await manager.chat(call, ChatRequest.prompt("hi"))).credential_source]
        sources.append((await manager.chat(call, ChatRequest.prompt("hi"))).credential_source)
        manager.environ = {"ANTHROPIC_API_KEY": "sk-ant-ROTATED-7777"}  # the operator rotated its key
        sources.append((await manager.chat(call, ChatRequest.prompt("hi"))).credential_source)
        await runtime.credentials.set("acme", "account", "mike", "k_acc", K["account"])  # the account's own
        sources.append((await manager.chat(call, ChatRequest.prompt("hi"))).credential_source)
        sent = [request.header("x-api-key") for request in emulator.requests(ANTHROPIC_PATH)]
        assert sources == ["operator", "operator", "operator", "account"]
        assert sent == [ENV_KEY, ENV_KEY, "sk-ant-ROTATED-7777", K["account"]]

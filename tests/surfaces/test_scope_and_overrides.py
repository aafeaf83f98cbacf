"""A project scope is required on every surface (seed 000 §3: "research tools require a project
scope"), the default project stays the default when none is named; per-call overrides (DESIGN §2)
come through the Python API and the admin-only `overrides` of the HTTP search endpoints."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from mcp import Client
from mcp.shared.exceptions import MCPError
from typer.testing import CliRunner

from zarniwoop import Zarniwoop
from zarniwoop.contract import InvalidRequestError, ScopeRequiredError, SearchScope
from zarniwoop.surfaces.cli import app as cli_app
from zarniwoop.surfaces.http import create_app
from zarniwoop.surfaces.mcp import build_mcp_server, fixed_principal
from zarniwoop.tenancy.tokens import Principal, TokenStore
from zarniwoop.tools import Toolbox

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, open_runtime, write_config

SCOPE_ERROR = "project: research tools require a project scope"
SEARCH = {"query": "aurora", "modality": "encyclopedia"}


def settings(emulator) -> dict:
    emulator.add("/a/w/rest.php/v1/search/page", Reply(status=503))
    emulator.add("/b/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Aurora")))
    return {
        **only(),
        **endpoint("wiki-a", "wikipedia", f"{emulator.url}/a"),
        **endpoint("wiki-b", "wikipedia", f"{emulator.url}/b"),
        "research.default.encyclopedia": "wiki-a",
        "research.cache.ttlSeconds.encyclopedia": 0,
    }


def test_the_contract_refuses_a_blank_scope():
    for project in ("", "   "):
        with pytest.raises(ScopeRequiredError) as caught:
            SearchScope("acme", project)
        assert caught.value.message == SCOPE_ERROR and caught.value.exit_code == 2
    assert SearchScope() == SearchScope("default", "default")


@pytest.mark.parametrize("project", ["", "  "])
def test_cli_blank_project_exits_2_naming_the_scope(tmp_path, monkeypatch, emulator, project):
    monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path / "home"))
    config = write_config(tmp_path, {"settings": settings(emulator)})
    runner = CliRunner()
    result = runner.invoke(cli_app, ["--config", str(config), "--project", project, "search", "aurora"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: --project: research tools require a project scope"
    assert emulator.requests() == []
    default = runner.invoke(cli_app, ["--config", str(config), "search", "aurora", "-m", "encyclopedia"])
    assert default.exit_code == 0, default.stderr  # no project named: the default project


@pytest.fixture
def http(tmp_path, emulator) -> Iterator[tuple[TestClient, dict[str, dict[str, str]]]]:
    app = create_app(config=write_config(tmp_path, {"settings": settings(emulator)}), home=tmp_path / "home")
    with TestClient(app, raise_server_exceptions=False) as client:
        store = TokenStore(app.state.zarniwoop.runtime.db)
        headers = {
            role: {"Authorization": f"Bearer {client.portal.call(store.create, '*', '*', role).token}"}  # type: ignore[union-attr]
            for role in ("user", "admin")
        }
        yield client, headers


def test_http_blank_project_is_a_422_naming_the_scope(http):
    client, headers = http
    for project in ("", " "):
        answer = client.post(
            "/v1/research/search", json=SEARCH, params={"project": project}, headers=headers["user"]
        )
        assert answer.status_code == 422
        assert answer.json() == {"error": {"field": "project", "message": SCOPE_ERROR}}
    mcp = client.post(
        "/mcp",
        params={"project": ""},
        headers={**headers["user"], "Accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    assert mcp.status_code == 422 and mcp.json()["error"]["message"] == SCOPE_ERROR
    named_none = client.post("/v1/research/search", json=SEARCH, headers=headers["user"])
    assert named_none.status_code == 200 and named_none.json()["providerInstanceId"] == "wiki-b"


@pytest.mark.anyio
async def test_mcp_tools_refuse_a_blank_project(tmp_path, emulator):
    async with await open_runtime(tmp_path, settings(emulator)) as rt:
        server = build_mcp_server(Toolbox(rt), fixed_principal(Principal("default", "", "user")))
        async with Client(server) as client:
            with pytest.raises(MCPError, match="research tools require a project scope"):
                await client.call_tool("research_search", SEARCH)
    assert emulator.requests() == []


@pytest.mark.anyio
async def test_python_api_refuses_a_blank_project_and_defaults_an_unnamed_one(tmp_path, emulator):
    config = write_config(tmp_path, {"settings": settings(emulator)})
    with pytest.raises(ScopeRequiredError):
        Zarniwoop.open(config, project="", home=tmp_path / "home")
    async with Zarniwoop.open(config, home=tmp_path / "home") as zw:
        assert zw.scope == SearchScope("default", "default")
        with pytest.raises(ScopeRequiredError):
            zw.scoped(project=" ")


@pytest.mark.anyio
async def test_python_api_overrides_apply_to_one_call(tmp_path, emulator):
    config = write_config(tmp_path, {"settings": settings(emulator)})
    async with Zarniwoop.open(config, home=tmp_path / "home") as zw:
        routed = await zw.search(
            "aurora", "encyclopedia", overrides={"research.default.encyclopedia": "wiki-b"}
        )
        plain = await zw.search("aurora", "encyclopedia")
        expert = await zw.search_expert(
            "aurora", "encyclopedia", overrides={"research.endpoint.wiki-a.enabled": False}
        )
        with pytest.raises(InvalidRequestError) as caught:
            await zw.search("aurora", "encyclopedia", overrides={"ai.default.model": "gpt-4o"})
    assert [(a.provider_instance_id, a.outcome.value) for a in routed.attempts] == [("wiki-b", "success")]
    assert [(a.provider_instance_id, a.outcome.value) for a in plain.attempts] == [
        ("wiki-a", "hard_error"),
        ("wiki-b", "success"),
    ]
    assert [(a.provider_instance_id, a.outcome.value) for a in expert.attempts] == [
        ("wiki-a", "skipped_disabled"),
        ("wiki-b", "success"),
    ]
    assert caught.value.field == "overrides.ai.default.model"


def test_http_overrides_are_admin_only(http):
    client, headers = http
    body = {**SEARCH, "overrides": {"research.default.encyclopedia": "wiki-b"}}
    admin = client.post("/v1/research/search", json=body, headers=headers["admin"])
    assert admin.status_code == 200
    assert [a["providerInstanceId"] for a in admin.json()["attempts"]] == ["wiki-b"]
    user = client.post("/v1/research/search", json=body, headers=headers["user"])
    assert user.status_code == 403
    assert "overrides" in user.json()["error"]["message"]
    expert = client.post(
        "/v1/research/search_expert",
        json={**SEARCH, "maxResults": 3, "overrides": {"research.endpoint.wiki-b.enabled": False}},
        headers=headers["admin"],
    )
    # wiki-b switched off for this call only: wiki-a's failure is the answer.
    assert [(a["providerInstanceId"], a["outcome"]) for a in expert.json()["attempts"]] == [
        ("wiki-a", "hard_error")
    ]
    bad = client.post(
        "/v1/research/search", json={**SEARCH, "overrides": {"tokens.secret": "x"}}, headers=headers["admin"]
    )
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "overrides.tokens.secret"
    tool = client.post("/v1/tools/research_search", json={**body}, headers=headers["admin"])
    assert tool.status_code == 422 and tool.json()["error"]["field"] == "overrides"  # not a tool argument
    schema = client.get("/openapi.json").json()
    assert "overrides" in schema["components"]["schemas"]["SearchBody"]["properties"]


@pytest.mark.parametrize(
    ("method", "path", "needs"),
    [
        ("GET", "/v1/settings", "settings"),
        ("GET", "/v1/credentials", "credentials"),
        ("GET", "/v1/tokens", "tokens"),
        ("GET", "/v1/usage", "usage reports"),
        ("GET", "/v1/research/providers", "research tools"),
    ],
)
def test_a_blank_scope_error_names_what_the_route_needs_it_for(http, method, path, needs):
    client, headers = http
    for field in ("project", "tenant"):
        answer = client.request(method, path, params={field: " "}, headers=headers["admin"])
        assert answer.status_code == 422, answer.text
        assert answer.json() == {
            "error": {"field": field, "message": f"{field}: {needs} require a {field} scope"}
        }

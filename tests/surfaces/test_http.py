"""The HTTP API (FastAPI TestClient): auth, scope isolation, admin-only fields, bad input, every route."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from zarniwoop.contract import SearchScope
from zarniwoop.surfaces.http import create_app
from zarniwoop.tenancy.tokens import TokenStore
from zarniwoop.tools import TOOL_NAMES, TOOLS

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.media import MEDIA_PROTOCOLS, media_items
from ..support.runtime import endpoint, only, write_config

MB_QUERY = "q" * (1024 * 1024 - 4096)  # just under the 1 MiB body cap: refused by the query rule


@dataclass
class Api:
    client: TestClient
    tokens: dict[str, str]

    def as_(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def get(self, path: str, who: str, **params: str):
        return self.client.get(path, headers=self.as_(who), params=params)

    def post(self, path: str, who: str, body: object = None, **params: str):
        return self.client.post(path, headers=self.as_(who), json=body, params=params)


@pytest.fixture
def api(tmp_path, emulator) -> Iterator[Api]:
    emulator.add("/a/w/rest.php/v1/search/page", Reply(status=503))
    emulator.add("/w/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Aurora", "Aurora borealis")))
    for kind in ("web", "video", "news"):
        emulator.add(f"/m/{kind}", Reply.json(media_items(kind)))
    emulator.add("/m/image", Reply(status=503))
    settings = {
        **only(),
        **endpoint("wiki-a", "wikipedia", f"{emulator.url}/a"),
        **endpoint("wiki-b", "wikipedia", f"{emulator.url}/w"),
        **endpoint("media", "mediatest", f"{emulator.url}/m"),
        "research.default.encyclopedia": "wiki-a",
        "research.fallback.encyclopedia": "wiki-b",
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.encyclopedia": 0,
        "research.cache.ttlSeconds.news": 0,
    }
    config = write_config(tmp_path, {"settings": settings})
    app = create_app(config=config, home=tmp_path / "home", protocols=MEDIA_PROTOCOLS)
    with TestClient(app, raise_server_exceptions=False) as client:
        store = TokenStore(app.state.zarniwoop.runtime.db)
        tokens = {
            who: client.portal.call(store.create, tenant, project, role).token  # type: ignore[union-attr]
            for who, (tenant, project, role) in {
                "a_user": ("acme", "a", "user"),
                "a_admin": ("acme", "a", "admin"),
                "b_user": ("acme", "b", "user"),
                "acme_admin": ("acme", "*", "tenant-admin"),
                "operator": ("*", "*", "admin"),
            }.items()
        }
        yield Api(client, tokens)


PROTECTED = [
    ("POST", "/v1/research/search"),
    ("POST", "/v1/research/search_expert"),
    ("POST", "/v1/research/rich"),
    ("POST", "/v1/research/investigate"),
    ("GET", "/v1/research/providers"),
    ("GET", "/v1/_routing"),
    ("GET", "/v1/tools"),
    ("POST", "/v1/tools/research_search"),
    ("GET", "/v1/usage"),
    ("POST", "/v1/admin/projects/a/stop"),
    ("GET", "/metrics"),
    ("POST", "/mcp"),
]


def test_no_valid_token_is_401(api):
    for header, message in [
        (None, "missing bearer token: send Authorization: Bearer <token>"),
        ("Basic dXNlcjpwdw==", "expected Authorization: Bearer <token>"),
        ("Bearer zw_not-a-real-token", "invalid or revoked token"),
    ]:
        headers = {"Authorization": header} if header else {}
        for method, path in PROTECTED:
            response = api.client.request(
                method, path, headers=headers, json={"query": "x", "modality": "web"}
            )
            assert response.status_code == 401, (method, path, header)
            assert response.json() == {"error": {"message": message}}
            assert response.headers["www-authenticate"].startswith("Bearer")


def test_revoked_token_is_401(api):
    store = TokenStore(api.client.app.state.zarniwoop.runtime.db)  # type: ignore[attr-defined]
    assert api.get("/v1/research/providers", "b_user").status_code == 200
    api.client.portal.call(store.revoke, api.tokens["b_user"])  # type: ignore[union-attr]
    assert api.get("/v1/research/providers", "b_user").status_code == 401


def test_healthz_and_openapi_need_no_token(api):
    assert api.client.get("/healthz").json() == {"status": "ok", "version": "0.1.0"}
    spec = api.client.get("/openapi.json").json()
    for path in ("/v1/research/search", "/v1/research/rich", "/v1/_routing", "/v1/tools/{name}", "/v1/usage"):
        assert path in spec["paths"]
    # the tool's own schema, plus the caller's (never the model's) cache switch and admin-only overrides
    body = spec["components"]["schemas"]["SearchBody"]
    assert list(body["properties"]) == [
        "query",
        "modality",
        "maxResults",
        "locale",
        "profile",
        "includeDomains",
        "excludeDomains",
        "timeRange",
        "safeSearch",
        "region",
        "page",
        "strictFilters",
        "cache",
        "overrides",
    ]
    assert body["required"] == ["query", "modality"]
    # Every status a handler can answer is documented, with the one error shape.
    responses = spec["paths"]["/v1/research/search"]["post"]["responses"]
    assert sorted(responses) == ["200", "400", "401", "403", "404", "422", "424", "429"]
    assert responses["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorBody"
    }
    assert list(spec["paths"]["/metrics"]["get"]["responses"]["200"]["content"]) == ["text/plain"]


FOREIGN = [
    ("GET", "/v1/research/providers", {"project": "b"}),
    ("GET", "/v1/usage", {"project": "b"}),
    ("GET", "/v1/_routing", {"project": "b"}),
    ("POST", "/v1/research/search", {"project": "b"}),
    ("POST", "/v1/tools/research_providers", {"project": "b"}),
    ("POST", "/v1/admin/projects/b/stop", {}),
    ("GET", "/v1/research/providers", {"tenant": "other"}),
    ("POST", "/v1/admin/projects/a/stop", {"tenant": "other"}),
    ("POST", "/mcp", {"project": "b"}),
]


def test_a_token_of_project_a_gets_403_for_project_b(api):
    for who in ("a_user", "a_admin"):
        for method, path, params in FOREIGN:
            body = {"query": "aurora", "modality": "encyclopedia"} if path.endswith("search") else None
            response = api.client.request(method, path, headers=api.as_(who), params=params, json=body)
            assert response.status_code == 403, (who, method, path, params)
            expected = (
                "this token is bound to tenant 'acme', not 'other'"
                if "tenant" in params
                else "this token is bound to project 'a', not 'b'"
            )
            assert response.json() == {"error": {"message": expected}}
    assert api.get("/v1/research/providers", "b_user", project="b").status_code == 200


def test_own_project_is_served_and_scope_is_the_tokens(api):
    a = api.get("/v1/usage", "a_user")
    b = api.get("/v1/usage", "b_user", project="b")
    assert a.json()["scope"] == {"tenant": "acme", "project": "a"}
    assert b.json()["scope"] == {"tenant": "acme", "project": "b"}


def test_last_error_only_for_admin_tokens(api):
    first = api.post("/v1/research/search", "a_user", {"query": "aurora", "modality": "encyclopedia"})
    assert first.status_code == 200
    assert first.json()["providerInstanceId"] == "wiki-b"
    user = {e["id"]: e for e in api.get("/v1/research/providers", "a_user").json()["providers"]}
    admin = {e["id"]: e for e in api.get("/v1/research/providers", "a_admin").json()["providers"]}
    assert "lastError" not in user["wiki-a"] and "keySource" not in user["wiki-a"]
    assert admin["wiki-a"]["lastError"] == "HTTP 503"
    assert admin["wiki-b"]["lastError"] is None
    assert user["wiki-a"]["availability"] == "COOLDOWN" and user["wiki-a"]["reachable"] is False
    routing_user = api.get("/v1/_routing", "a_user").json()
    routing_admin = api.get("/v1/_routing", "a_admin").json()
    assert all("lastError" not in row for row in routing_user["search"])
    assert {row["id"]: row["lastError"] for row in routing_admin["search"]}["wiki-a"] == "HTTP 503"
    # project b never called wiki-a: its routing view is its own
    routing_b = api.get("/v1/_routing", "b_user", project="b").json()
    assert {row["id"]: row["reachable"] for row in routing_b["search"]}["wiki-a"] is None


def test_routing_view_shape(api):
    api.post("/v1/research/search", "a_user", {"query": "aurora", "modality": "encyclopedia"})
    view = api.get("/v1/_routing", "a_admin").json()
    assert view["scope"] == {"tenant": "acme", "project": "a"}
    rows = {row["id"]: row for row in view["search"]}
    assert rows["wiki-b"] == {
        "id": "wiki-b",
        "protocol": "wikipedia",
        "keyable": True,
        "available": True,
        "selected": True,
        "selectedFor": ["ENCYCLOPEDIA"],
        "reachable": True,
        "cooldownUntil": None,
        "quota": None,
        "statusText": None,
        "lastError": None,
    }
    # cooldowns are per modality: wiki-a cools down for ENCYCLOPEDIA only and is still WEB's pick
    assert rows["wiki-a"]["selectedFor"] == ["WEB"]
    assert rows["wiki-a"]["available"] is False and rows["wiki-a"]["cooldownUntil"] is not None
    enc = [(s["id"], s["gate"], s["selected"]) for s in view["searchCascades"]["ENCYCLOPEDIA"]]
    assert enc == [("wiki-a", "skipped_cooldown", False), ("wiki-b", "ready", True)]
    assert view["llm"]["aliases"] == [] and "error" in view["llm"]["default"]  # no LLM configured here


def test_research_endpoints(api):
    search = api.post(
        "/v1/research/search", "a_user", {"query": "aurora", "modality": "ENCYCLOPEDIA", "maxResults": 1}
    )
    assert [h["title"] for h in search.json()["hits"]] == ["Aurora"]
    expert = api.post(
        "/v1/research/search_expert",
        "a_user",
        {"query": "aurora", "modality": "encyclopedia", "maxResults": 2, "pinnedProviderId": "wiki-b"},
    ).json()
    assert expert["tier"] == "EXPERT" and [a["providerInstanceId"] for a in expert["attempts"]] == ["wiki-b"]
    rich = api.post("/v1/research/rich", "a_user", {"query": "aurora", "maxResults": 5})
    assert rich.status_code == 200
    groups = rich.json()["results"]
    assert [len(groups[m]["hits"]) for m in ("WEB", "VIDEO", "NEWS")] == [2, 2, 2]
    assert groups["IMAGE"]["errorMessage"] == "every provider failed — media: HTTP 503"
    investigate = api.post("/v1/research/investigate", "a_user", {"question": "aurora", "maxResults": 3})
    assert investigate.status_code == 200
    ranked = investigate.json()
    assert ranked["question"] == "aurora" and ranked["strategies"]["plan"] == "heuristic"
    assert "Aurora" in [h["hit"]["title"] for h in ranked["hits"]]


def test_tools_listing_and_call_by_name(api):
    listed = api.get("/v1/tools", "a_user").json()["tools"]
    assert listed == [spec.definition() for spec in TOOLS]
    assert [t["name"] for t in listed] == list(TOOL_NAMES)
    called = api.post("/v1/tools/research_search", "a_user", {"query": "aurora", "modality": "encyclopedia"})
    body = called.json()
    assert set(body) == {"name", "isError", "text", "structured"}
    assert body["name"] == "research_search" and body["isError"] is False
    assert body["text"].startswith("[1] Aurora\n")
    assert body["structured"]["providerInstanceId"] == "wiki-b"
    providers = api.post("/v1/tools/research_providers", "a_user")  # no body at all
    assert providers.status_code == 200 and providers.json()["structured"]["providers"]
    unknown = api.post("/v1/tools/research_images", "a_user", {})
    assert unknown.status_code == 404
    assert (
        unknown.json()["error"]["message"]
        == f"unknown tool 'research_images'; expected one of {', '.join(TOOL_NAMES)}"
    )


BAD_INPUTS = [
    (
        {"query": "x", "modality": "smells"},
        "modality",
        "modality: expected one of WEB, IMAGE, VIDEO, PDF, NEWS, ACADEMIC",
    ),
    ({"modality": "web", "maxResults": 3}, "query", "query: is required"),
    ({"query": 17, "modality": "web", "maxResults": 3}, "query", "query: input should be a valid string"),
    (
        {"query": "x", "modality": "web", "maxResults": "lots"},
        "maxResults",
        "maxResults: input should be a valid integer",
    ),
    (
        {"query": "x", "modality": "web", "maxResults": 3, "limit": 5},
        "limit",
        "limit: unknown parameter; expected one of",
    ),
    (
        {"query": MB_QUERY, "modality": "web", "maxResults": 3},
        "query",
        f"query: must be at most 2000 characters, got {len(MB_QUERY)}",
    ),
]
ENDPOINTS = [
    ("/v1/research/search", "research_search"),
    ("/v1/research/search_expert", "research_search_expert"),
]


def test_bad_input_is_422_naming_the_field_on_endpoints_and_tool_calls(api):
    for path, tool in ENDPOINTS:
        for body, field, message in BAD_INPUTS:
            for url in (path, f"/v1/tools/{tool}"):
                response = api.post(url, "a_user", body)
                assert response.status_code == 422, (url, field)
                error = response.json()["error"]
                assert error["field"] == field
                assert error["message"].startswith(message)
                assert len(response.content) < 400  # the 1 MB query is not echoed back


OTHER_BAD_INPUTS = [
    ("/v1/research/rich", {"maxResults": 3}, "query"),
    ("/v1/research/rich", {"query": MB_QUERY, "maxResults": 3}, "query"),
    ("/v1/research/rich", {"query": "x", "maxResults": -1}, "maxResults"),
    ("/v1/research/rich", {"query": "x", "maxResults": 3, "modality": "IMAGE"}, "modality"),
    ("/v1/research/investigate", {}, "question"),
    ("/v1/research/investigate", {"question": MB_QUERY}, "question"),
    ("/v1/research/investigate", {"question": "q", "depth": "deep"}, "depth"),
    ("/v1/tools/research_rich", {"query": ["a"], "maxResults": 3}, "query"),
    ("/v1/tools/research_providers", {"verbose": True}, "verbose"),
    ("/v1/tools/research_search", [1, 2, 3], "body"),
    ("/v1/research/search", [1, 2, 3], "body"),
]


def test_bad_input_on_every_other_endpoint(api):
    for path, body, field in OTHER_BAD_INPUTS:
        response = api.post(path, "a_user", body)
        assert response.status_code == 422, (path, field)
        assert response.json()["error"]["field"] == field


def test_malformed_json_and_bad_query_parameters_are_422(api):
    raw = api.client.post(
        "/v1/research/search",
        headers={**api.as_("a_user"), "Content-Type": "application/json"},
        content=b"{nope",
    )
    assert raw.status_code == 422
    assert raw.json()["error"]["field"] == "body"
    assert raw.json()["error"]["message"].startswith("body: is not valid JSON")
    long_tenant = api.get("/v1/research/providers", "a_user", tenant="t" * 500)
    assert long_tenant.status_code == 422 and long_tenant.json()["error"]["field"] == "tenant"
    bad_project = api.post("/v1/admin/projects/bad%20name!/stop", "a_admin")
    assert bad_project.status_code == 422 and bad_project.json()["error"]["field"] == "project"


def test_usage_reports_the_audit_log_of_the_tokens_scope(api):
    api.post("/v1/research/search", "a_user", {"query": "aurora", "modality": "encyclopedia"})
    report = api.get("/v1/usage", "a_user").json()
    assert report["scope"] == {"tenant": "acme", "project": "a"} and report["enabled"] is True
    rows = {(r["instance"], r["modality"]): r for r in report["research"]["rows"]}
    assert (rows[("wiki-a", "ENCYCLOPEDIA")]["calls"], rows[("wiki-a", "ENCYCLOPEDIA")]["failures"]) == (1, 1)
    assert (rows[("wiki-b", "ENCYCLOPEDIA")]["calls"], rows[("wiki-b", "ENCYCLOPEDIA")]["hits"]) == (1, 2)
    assert report["research"]["totals"] == {"calls": 2, "hits": 2, "failures": 1}
    assert api.get("/v1/usage", "b_user", project="b").json()["research"]["rows"] == []  # b's own log
    assert api.get("/v1/usage", "a_user", since="7d").json()["research"]["totals"]["calls"] == 2
    bad = api.get("/v1/usage", "a_user", since="yesterday")
    assert bad.status_code == 422
    assert bad.json()["error"]["field"] == "since"


def test_an_unexpected_failure_is_a_500_without_a_traceback(api):
    async def broken(scope, admin):
        raise RuntimeError("secret internals at /srv/zarniwoop/db.py line 42")

    api.client.app.state.zarniwoop.runtime.routing_sections["broken"] = broken  # type: ignore[attr-defined]
    response = api.get("/v1/_routing", "a_user")
    assert response.status_code == 500
    assert response.json() == {"error": {"message": "internal error; the server log has the details"}}
    assert "Traceback" not in response.text and "secret" not in response.text


def test_stop_needs_an_admin_token_of_that_project(api):
    api.post("/v1/research/search", "a_user", {"query": "aurora", "modality": "encyclopedia"})
    instances = len(api.get("/v1/research/providers", "a_user").json()["providers"])
    assert instances >= 3  # wiki-a, wiki-b, media and the (disabled) built-ins
    denied = api.post("/v1/admin/projects/a/stop", "a_user")
    assert denied.status_code == 403
    assert denied.json()["error"]["message"] == "stopping a project needs an admin token"
    stopped = api.post("/v1/admin/projects/a/stop", "a_admin")
    assert stopped.status_code == 200
    assert stopped.json() == {"tenant": "acme", "project": "a", "stopped": True, "disposed": instances}
    again = api.post("/v1/admin/projects/a/stop", "a_admin").json()
    assert again["disposed"] == 0  # already evicted


def test_ai_model_discovery_is_operator_only(api):
    for who in ("a_user", "a_admin", "acme_admin"):
        denied = api.post("/v1/admin/ai-models/discover", who)
        assert denied.status_code == 403, who
        assert denied.json() == {
            "error": {"message": "this needs an operator token (an admin token bound to tenant '*')"}
        }
    discovered = api.post("/v1/admin/ai-models/discover", "operator", tenant="acme", project="a").json()
    # the scope is the one named; acme/a configures no LLM provider instance
    assert discovered["scopes"] == [
        {"tenant": "acme", "project": "a", "instances": [], "skippedInstances": []}
    ]


def test_a_tenant_admin_refreshes_its_tenants_catalog_but_not_the_systems(api, tmp_path):
    """Seed 002 §3a.4: refresh on demand is a tenant admin's right, for its tenant's layers; the
    system's (every tenant's) stays the operator's, and a tenant's report names no one else's files."""
    documents = tmp_path / "home" / "documents"
    for tenant, text in (("acme", "contextWindowTokens: 64000\n"), ("beta", "size: HUGE\n")):
        folder = documents / tenant / "_tenant" / "model" / "openai"
        folder.mkdir(parents=True)
        (folder / "house-model.yaml").write_text(text)
    runtime = api.client.app.state.zarniwoop.runtime  # type: ignore[attr-defined]
    catalog = api.client.portal.call(runtime.catalog)  # type: ignore[union-attr]

    refreshed = api.post("/v1/admin/ai-models/refresh", "acme_admin")
    assert refreshed.status_code == 200
    report = refreshed.json()
    assert (report["scope"], report["tenant"], report["documentsLoaded"], report["overrideScopes"]) == (
        "tenant",
        "acme",
        1,
        1,
    )
    assert report["skipped"] == [] and report["bundledModelsLoaded"] > 0  # beta's bad file unread
    assert catalog.lookup("openai", "house-model", SearchScope("acme", "a")).context_window_tokens == 64000
    assert api.post("/v1/admin/ai-models/refresh", "acme_admin", tenant="acme").json()["tenant"] == "acme"

    for who, tenant, message in [
        (
            "acme_admin",
            "_system",
            "refreshing the system catalog (every tenant's) needs an operator token; "
            "a tenant admin refreshes its own tenant",
        ),
        ("acme_admin", "beta", "this token is bound to tenant 'acme', not 'beta'"),
        ("a_admin", "acme", "refreshing a tenant's model catalog needs a tenant-admin token"),
        ("a_user", None, "refreshing a tenant's model catalog needs a tenant-admin token"),
    ]:
        denied = api.post("/v1/admin/ai-models/refresh", who, **({"tenant": tenant} if tenant else {}))
        assert denied.status_code == 403, (who, tenant)
        assert denied.json() == {"error": {"message": message}}

    system = api.post("/v1/admin/ai-models/refresh", "operator").json()
    assert (system["scope"], system["tenant"]) == ("system", None)
    # bundled, its first-boot copy in (_system, _tenant), and acme's one document
    assert system["documentsLoaded"] == 2 * report["bundledModelsLoaded"] + 1
    beta_file = str(documents / "beta" / "_tenant" / "model" / "openai" / "house-model.yaml")
    assert system["skipped"] == [
        {"file": beta_file, "reason": "unknown size 'HUGE'; expected SMALL or LARGE"}
    ]
    assert api.post("/v1/admin/ai-models/refresh", "operator", tenant="_system").json()["scope"] == "system"


def test_metrics_is_prometheus_text_for_operator_tokens_only(api):
    for who in ("a_user", "a_admin", "acme_admin"):  # the series name every tenant's instances
        denied = api.get("/metrics", who)
        assert denied.status_code == 403, who
        assert denied.json()["error"]["message"].startswith("this needs an operator token")
    response = api.get("/metrics", "operator")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    api.post("/v1/research/search", "a_user", {"query": "aurora", "modality": "encyclopedia"})
    response = api.get("/metrics", "operator")
    families = {f.name for f in text_string_to_metric_families(response.text)}
    assert {"zarniwoop_research_dispatch", "zarniwoop_research_provider_calls"} <= families
    assert "acme" not in response.text  # no tenant or project in any label


def test_unknown_route_is_json_404(api):
    response = api.get("/v1/nothing", "a_user")
    assert response.status_code == 404
    assert response.json() == {"error": {"message": "Not Found"}}
    assert json.loads(response.text)


def test_the_search_route_neither_compacts_nor_renders_what_it_does_not_return(api, monkeypatch):
    """Issue 18: the HTTP routes answer the full JSON; the compact JSON and the text rendering
    (MCP's, the CLI's) are computed only when read, so here never."""
    import zarniwoop.tools.registry as registry
    import zarniwoop.tools.search as search

    def refuse(*args, **kwargs):
        raise AssertionError("computed for an HTTP answer")

    monkeypatch.setattr(registry, "compact", refuse)
    monkeypatch.setattr(search, "render_result", refuse)
    response = api.post("/v1/research/search", "a_user", {"query": "aurora", "modality": "encyclopedia"})
    assert response.status_code == 200, response.text
    assert [h["title"] for h in response.json()["hits"]] == ["Aurora", "Aurora borealis"]
    tool = api.post("/v1/tools/research_search", "a_user", {"query": "aurora", "modality": "encyclopedia"})
    assert tool.status_code == 500  # POST /v1/tools/{name} does read both: the refusal shows there


def test_whoami_names_the_binding_the_role_and_the_scope_acted_on(api):
    assert api.get("/v1/whoami", "a_user").json() == {
        "tenant": "acme",
        "project": "a",
        "binding": {"tenant": "acme", "project": "a"},
        "role": "user",
        "operator": False,
        "tenantAdmin": False,
        "account": None,
        "profile": None,
    }
    operator = api.get("/v1/whoami", "operator", tenant="acme", project="b").json()
    assert (operator["tenant"], operator["project"], operator["binding"], operator["operator"]) == (
        "acme",
        "b",
        {"tenant": "*", "project": "*"},
        True,
    )
    assert api.get("/v1/whoami", "acme_admin").json()["tenantAdmin"] is True
    assert api.client.get("/v1/whoami").status_code == 401

"""`/v1/credentials` and `/v1/ai-models` (issue 14): tenant and account credentials set, rotated and
deleted over HTTP with the tenant-wide reach, values never answered nor stored in the clear, every
write audited without its value; the scope's model catalog with the layer of each field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from zarniwoop.surfaces.http import create_app

from ..support.emulator import Emulator
from ..support.gateway import openai_completion
from ..support.llm import trusting
from ..support.runtime import only, write_config

OLD_KEY = "sk-console-OLD-4f1c2a9d7e"
NEW_KEY = "sk-console-NEW-8b3e5d0c61"
TENANT_KEY = "tenant-wide-key-55aa17c3"


@dataclass
class Console:
    client: TestClient
    tokens: dict[str, str]
    home: Path

    def call(self, method: str, path: str, who: str, **kwargs):
        return self.client.request(
            method, path, headers={"Authorization": f"Bearer {self.tokens[who]}"}, **kwargs
        )

    def audit(self) -> list[tuple[str, ...]]:
        rt = self.client.app.state.zarniwoop.runtime  # type: ignore[attr-defined]
        rows = self.client.portal.call(  # type: ignore[union-attr]
            rt.db.fetchall,
            "SELECT token_id, tenant, level, owner, name, action FROM credential_changes ORDER BY at",
        )
        return [tuple(r) for r in rows]

    def token_id(self, who: str) -> str:
        rt = self.client.app.state.zarniwoop.runtime  # type: ignore[attr-defined]
        principal = self.client.portal.call(rt.tokens.verify, self.tokens[who])  # type: ignore[union-attr]
        return str(principal.token_id)


def tenants(emulator: Emulator) -> dict:
    return {
        "acme": {
            "settings": {
                "ai.provider.openai.baseUrl": emulator.url + "/v1",
                "ai.provider.openai.displayName": "Acme's OpenAI gateway",
            },
            "accounts": {
                "mike": {
                    "llm": {
                        "providers": [
                            {"provider": "openai", "model": "gpt-4o-mini", "api_key_ref": "cred_mike_openai"}
                        ]
                    }
                }
            },
        }
    }


@pytest.fixture
def console(tmp_path, emulator) -> Iterator[Console]:
    config = write_config(tmp_path, {"settings": trusting(only()), "tenants": tenants(emulator)})
    app = create_app(config=config, home=tmp_path / "home")
    with TestClient(app, raise_server_exceptions=False) as client:
        store = app.state.zarniwoop.runtime.tokens
        roles = {
            "operator": ("*", "*", "admin", None),
            "tenant": ("acme", "*", "admin", None),
            "tenant_admin": ("acme", "*", "tenant-admin", None),
            "admin": ("acme", "review", "admin", None),
            "user": ("acme", "review", "user", None),
            "mike": ("acme", "review", "user", "mike"),
            "other": ("globex", "*", "admin", None),
        }
        tokens = {
            who: client.portal.call(  # type: ignore[union-attr]
                lambda t=tenant, p=project, r=role, a=account: store.create(t, p, r, account=a)
            ).token
            for who, (tenant, project, role, account) in roles.items()
        }
        yield Console(client, tokens, tmp_path / "home")


def put(console: Console, who: str, **body):
    return console.call("PUT", "/v1/credentials", who, json=body)


def test_user_and_project_admin_tokens_get_403(console):
    body = {"level": "tenant", "name": "serper", "value": OLD_KEY}
    for who in ("user", "admin"):
        for method, path, kwargs in (
            ("GET", "/v1/credentials", {}),
            ("PUT", "/v1/credentials", {"json": body}),
            ("DELETE", "/v1/credentials/serper", {}),
        ):
            denied = console.call(method, path, who, **kwargs)
            assert denied.status_code == 403, (who, method)
    assert console.call("GET", "/v1/credentials", "user").json() == {
        "error": {"message": "this needs an admin token"}
    }
    assert console.call("GET", "/v1/credentials", "admin").json()["error"]["message"] == (
        "credentials are tenant-wide: they need a token for the whole tenant "
        "(a tenant-admin, or an admin bound to project *), not one project"
    )
    # a tenant's token cannot name another tenant
    assert console.call("GET", "/v1/credentials?tenant=acme", "other").status_code == 403
    assert console.audit() == []


def test_set_list_rotate_delete_never_answers_the_value_and_audits_without_it(console):
    seen: list[str] = []

    def answer(response) -> dict:
        seen.append(response.text)
        return response.json()

    made = answer(
        put(console, "tenant", level="account", account="mike", name="cred_mike_openai", value=OLD_KEY)
    )
    assert made["rotated"] is False and made["set"] is True
    assert (made["tenant"], made["level"], made["account"], made["owner"], made["name"]) == (
        "acme",
        "account",
        "mike",
        "mike",
        "cred_mike_openai",
    )
    assert made["origin"] == "console" and made["updatedBy"] == console.token_id("tenant")
    assert made["usedBy"] == ["account mike → openai:gpt-4o-mini"]
    tenant_wide = answer(put(console, "operator", level="tenant", name="serper", value=TENANT_KEY))
    assert tenant_wide["tenant"] == "default"  # the operator acts on ?tenant=, else "default"
    answer(console.call("DELETE", "/v1/credentials/serper", "operator"))
    answer(
        console.call(
            "PUT",
            "/v1/credentials?tenant=acme",
            "operator",
            json={"level": "tenant", "name": "serper", "value": TENANT_KEY},
        )
    )

    listed = answer(console.call("GET", "/v1/credentials", "tenant_admin"))
    assert listed["tenant"] == "acme"
    assert [(c["level"], c["account"], c["name"], c["set"]) for c in listed["credentials"]] == [
        ("tenant", None, "serper", True),
        ("account", "mike", "cred_mike_openai", True),
    ]
    only_mike = answer(console.call("GET", "/v1/credentials?level=account&account=mike", "tenant"))
    assert [c["name"] for c in only_mike["credentials"]] == ["cred_mike_openai"]
    assert (
        answer(console.call("GET", "/v1/credentials?level=tenant", "tenant"))["credentials"][0]["name"]
        == "serper"
    )

    rotated = answer(
        put(console, "tenant_admin", level="account", account="mike", name="cred_mike_openai", value=NEW_KEY)
    )
    assert rotated["rotated"] is True and rotated["updatedBy"] == console.token_id("tenant_admin")
    assert rotated["updatedAt"] > made["updatedAt"]

    gone = answer(
        console.call("DELETE", "/v1/credentials/cred_mike_openai?level=account&account=mike", "tenant")
    )
    assert gone == {
        "tenant": "acme",
        "level": "account",
        "account": "mike",
        "name": "cred_mike_openai",
        "deleted": True,
    }
    again = answer(
        console.call("DELETE", "/v1/credentials/cred_mike_openai?level=account&account=mike", "tenant")
    )
    assert again == {
        "error": {"message": "no credential 'cred_mike_openai' is stored for account mike of tenant acme"}
    }
    assert [c["name"] for c in answer(console.call("GET", "/v1/credentials", "tenant"))["credentials"]] == [
        "serper"
    ]

    tenant_id, admin_id, operator_id = (console.token_id(w) for w in ("tenant", "tenant_admin", "operator"))
    assert console.audit() == [
        (tenant_id, "acme", "account", "mike", "cred_mike_openai", "set"),
        (operator_id, "default", "tenant", "_tenant", "serper", "set"),
        (operator_id, "default", "tenant", "_tenant", "serper", "delete"),
        (operator_id, "acme", "tenant", "_tenant", "serper", "set"),
        (admin_id, "acme", "account", "mike", "cred_mike_openai", "rotate"),
        (tenant_id, "acme", "account", "mike", "cred_mike_openai", "delete"),
    ]
    db = (console.home / "zarniwoop.db").read_bytes() + b"".join(
        p.read_bytes() for p in console.home.glob("zarniwoop.db*")
    )
    assert b"cred_mike_openai" in db  # the right file: the audit keeps the name (never the value)
    for key in (OLD_KEY, NEW_KEY, TENANT_KEY):
        assert not any(key[:12] in text for text in seen), key
        assert key.encode() not in db and key[:12].encode() not in db


def test_a_rotated_account_key_is_the_one_the_next_llm_call_sends(console, emulator):
    emulator.add("/v1/chat/completions", openai_completion("hello", 10, 2))
    chat = {"model": "openai:gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    put(console, "tenant", level="account", account="mike", name="cred_mike_openai", value=OLD_KEY)
    assert console.call("POST", "/v1/chat/completions", "mike", json=chat).status_code == 200
    put(console, "tenant", level="account", account="mike", name="cred_mike_openai", value=NEW_KEY)
    assert console.call("POST", "/v1/chat/completions", "mike", json=chat).status_code == 200
    sent = [r.header("authorization") for r in emulator.requests("/v1/chat/completions")]
    assert sent == [f"Bearer {OLD_KEY}", f"Bearer {NEW_KEY}"]
    console.call("DELETE", "/v1/credentials/cred_mike_openai?level=account&account=mike", "tenant")
    missing = console.call("POST", "/v1/chat/completions", "mike", json=chat)
    assert missing.status_code == 400 and missing.json()["error"]["code"] == "missing_credential"
    assert len(emulator.requests("/v1/chat/completions")) == 2


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        (
            {"level": "account", "name": "k", "value": "v"},
            "account",
            "an account-level credential needs the account name",
        ),
        (
            {"level": "tenant", "account": "mike", "name": "k", "value": "v"},
            "account",
            "only an account-level credential names an account",
        ),
        ({"level": "account", "account": "../etc", "name": "k", "value": "v"}, "account", None),
        (
            {"level": "team", "name": "k", "value": "v"},
            "level",
            "input should be 'tenant' or 'account'",
        ),
        ({"level": "tenant", "name": "no/slash", "value": "v"}, "name", None),
        ({"level": "tenant", "name": "k", "value": "   "}, "value", "a credential value must not be empty"),
        ({"level": "tenant", "name": "k", "value": ""}, "value", "must not be empty"),
        ({"level": "tenant", "name": "k"}, "value", "is required"),
        ({"level": "tenant", "name": "k", "value": "v", "prefix": "x"}, "prefix", None),
    ],
)
def test_a_bad_write_is_422_naming_the_field_and_writes_nothing(console, body, field, message):
    response = put(console, "tenant", **body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == field
    if message is not None:
        assert error["message"] == f"{field}: {message}"
    assert console.call("GET", "/v1/credentials", "tenant").json()["credentials"] == []
    assert console.audit() == []


def test_a_secret_value_is_never_echoed_by_a_validation_error(console):
    for value in ("x" * 8193, 12345, ["sk-in-a-list-0001"]):
        response = put(console, "tenant", level="tenant", name="k", value=value)
        assert response.status_code == 422 and response.json()["error"]["field"] == "value"
        assert "xxxxxxxx" not in response.text and "12345" not in response.text
        assert "sk-in-a-list" not in response.text


# ---- the model catalog ------------------------------------------------------------------------


def write_doc(home: Path, tenant: str, project: str, kind: str, relative: str, text: str) -> None:
    path = home / "documents" / tenant / project / kind / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_ai_models_lists_every_instance_with_the_layer_of_each_field(console):
    home = console.home
    # project auto: a context window; project manual: one price (the other prices stay the system's)
    write_doc(
        home,
        "acme",
        "review",
        "model-auto",
        "anthropic/claude-haiku-4-5.yaml",
        "contextWindowTokens: 50000\n",
    )
    write_doc(
        home, "acme", "review", "model", "anthropic/claude-haiku-4-5.yaml", "pricing: {inputPerMTok: 0.5}\n"
    )
    # tenant auto: pricing null (unpriced) wipes the outer prices; project manual sets one again
    write_doc(home, "acme", "_tenant", "model-auto", "openai/gpt-4o-mini.yaml", "pricing: null\n")
    write_doc(home, "acme", "review", "model", "openai/gpt-4o-mini.yaml", "pricing: {outputPerMTok: 9}\n")
    refreshed = console.call("POST", "/v1/admin/ai-models/refresh", "operator").json()
    assert refreshed["skipped"] == [] and refreshed["overrideScopes"] == 3

    answer = console.call("GET", "/v1/ai-models", "user")
    assert answer.status_code == 200
    body = answer.json()
    assert body["scope"] == {"tenant": "acme", "project": "review"}
    assert body["layers"] == [
        "bundled",
        "_system/_tenant auto",
        "_system/_tenant manual",
        "acme/_tenant auto",
        "acme/_tenant manual",
        "acme/review auto",
        "acme/review manual",
    ]
    counts = {i["instance"]: i["models"] for i in body["instances"]}
    # `ai.provider.<instance>.displayName` is the name an instance is shown by; unset: none
    names = {i["instance"]: i["displayName"] for i in body["instances"]}
    assert names["openai"] == "Acme's OpenAI gateway" and names["anthropic"] is None
    assert (
        counts["anthropic"] == 11 and counts["openai"] == 16 and sum(counts.values()) == len(body["models"])
    )
    models = {(m["instance"], m["wireName"]): m for m in body["models"]}

    haiku = models[("anthropic", "claude-haiku-4-5")]
    assert haiku["contextWindowTokens"] == 50000 and haiku["pricing"]["inputPerMTok"] == 0.5
    assert haiku["pricing"]["outputPerMTok"] == 5.0
    assert haiku["fieldLayers"]["contextWindowTokens"] == "acme/review auto"
    assert haiku["fieldLayers"]["pricing.inputPerMTok"] == "acme/review manual"
    assert haiku["fieldLayers"]["pricing.outputPerMTok"] == "_system/_tenant manual"
    assert haiku["fieldLayers"]["size"] == "_system/_tenant manual"
    assert haiku["layers"] == ["bundled", "_system/_tenant manual", "acme/review auto", "acme/review manual"]

    mini = models[("openai", "gpt-4o-mini")]
    assert mini["pricing"]["outputPerMTok"] == 9.0 and mini["pricing"]["inputPerMTok"] is None
    assert {k: v for k, v in mini["fieldLayers"].items() if k.split(".")[0] == "pricing"} == {
        "pricing.outputPerMTok": "acme/review manual"
    }

    qwen = models[("ollama", "qwen3-coder:480b-cloud")]
    assert qwen["stripThinkTags"] is True and qwen["fieldLayers"]["stripThinkTags"] == "model-quirks.yaml"

    # another project of the tenant sees the tenant's layers, not review's
    other = console.call("GET", "/v1/ai-models?project=other&instance=openai", "tenant").json()
    assert other["instance"] == "openai" and {m["instance"] for m in other["models"]} == {"openai"}
    mini_other = next(m for m in other["models"] if m["wireName"] == "gpt-4o-mini")
    assert mini_other["pricing"] is None and mini_other["fieldLayers"]["pricing"] == "acme/_tenant auto"


def test_ai_models_names_an_unknown_instance(console):
    response = console.call("GET", "/v1/ai-models?instance=nosuch", "user")
    assert response.status_code == 404  # a well-formed name of nothing in this scope
    error = response.json()["error"]
    assert error["field"] == "instance"
    assert error["message"] == (
        "instance: the catalog has no models for instance 'nosuch' in this scope; "
        "known: anthropic, deepseek, gemini, lmstudio, ollama, ollama-cloud, openai"
    )
    assert console.client.get("/v1/ai-models").status_code == 401


def test_the_new_endpoints_are_in_the_openapi_document(console):
    doc = json.loads(console.client.get("/openapi.json").text)
    assert {"get", "put"} <= set(doc["paths"]["/v1/credentials"])
    assert "delete" in doc["paths"]["/v1/credentials/{name}"]
    assert "get" in doc["paths"]["/v1/ai-models"]
    schemas = doc["components"]["schemas"]
    assert "value" in schemas["CredentialWrite"]["properties"]
    assert "value" not in schemas["Credential"]["properties"]
    assert "fieldLayers" in schemas["CatalogModel"]["properties"]

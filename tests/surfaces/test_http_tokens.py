"""`/v1/tokens` (issue 14): admin tokens list, create and revoke the tokens within their own reach."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from zarniwoop.surfaces.http import create_app

from ..support.runtime import only, write_config


@dataclass
class Admin:
    client: TestClient
    tokens: dict[str, tuple[str, str]]  # who → (token, id)

    def call(self, method: str, path: str, who: str, **kwargs):
        headers = {"Authorization": f"Bearer {self.tokens[who][0]}"}
        return self.client.request(method, path, headers=headers, **kwargs)


@pytest.fixture
def admin(tmp_path) -> Iterator[Admin]:
    app = create_app(config=write_config(tmp_path, {"settings": only()}), home=tmp_path / "home")
    with TestClient(app, raise_server_exceptions=False) as client:
        store = app.state.zarniwoop.runtime.tokens
        made = {
            who: client.portal.call(store.create, tenant, project, role)  # type: ignore[union-attr]
            for who, (tenant, project, role) in {
                "operator": ("*", "*", "admin"),
                "tenant": ("acme", "*", "admin"),
                "project": ("acme", "review", "admin"),
                "other": ("globex", "*", "admin"),
                "user": ("acme", "review", "user"),
            }.items()
        }
        yield Admin(client, {who: (t.token, t.id) for who, t in made.items()})


def ids(answer) -> set[str]:
    return {t["id"] for t in answer.json()["tokens"]}


def test_each_admin_lists_the_tokens_within_its_reach_with_full_ids(admin):
    t = {who: token_id for who, (_, token_id) in admin.tokens.items()}
    assert ids(admin.call("GET", "/v1/tokens", "operator")) == set(t.values())
    assert ids(admin.call("GET", "/v1/tokens", "tenant")) == {t["tenant"], t["project"], t["user"]}
    assert ids(admin.call("GET", "/v1/tokens", "project")) == {t["project"], t["user"]}
    assert ids(admin.call("GET", "/v1/tokens", "other")) == {t["other"]}
    assert all(i.startswith("tok_") and len(i) == 16 for i in t.values())
    listed = admin.call("GET", "/v1/tokens", "operator").text
    assert all(token not in listed for token, _ in admin.tokens.values())  # ids only, never a token
    assert admin.call("GET", "/v1/tokens", "user").status_code == 403


def test_create_within_reach_shows_the_token_once_and_it_works(admin):
    made = admin.call("POST", "/v1/tokens", "tenant", json={"project": "ui", "role": "user", "label": "ci"})
    assert made.status_code == 201
    body = made.json()
    assert (body["tenant"], body["project"], body["role"], body["label"]) == ("acme", "ui", "user", "ci")
    fresh = {"Authorization": f"Bearer {body['token']}"}
    assert admin.client.get("/v1/_routing", headers=fresh).json()["scope"] == {
        "tenant": "acme",
        "project": "ui",
    }
    listed = admin.call("GET", "/v1/tokens", "tenant")
    assert body["id"] in ids(listed) and body["token"] not in listed.text
    wide = admin.call("POST", "/v1/tokens", "tenant", json={"role": "tenant-admin", "project": "*"})
    assert wide.status_code == 201 and wide.json()["role"] == "tenant-admin"
    default = admin.call("POST", "/v1/tokens", "project", json={}).json()
    assert (default["tenant"], default["project"], default["role"]) == ("acme", "review", "user")


@pytest.mark.parametrize(
    ("who", "body", "status"),
    [
        ("project", {"project": "elsewhere"}, 403),  # another project
        ("project", {"project": "*"}, 403),  # wider than itself
        ("tenant", {"tenant": "globex", "project": "x"}, 403),  # another tenant
        ("tenant", {"tenant": "*", "project": "*"}, 403),
        ("project", {"role": "tenant-admin", "project": "*"}, 403),  # a wider role
        ("user", {}, 403),
        ("tenant", {"role": "root"}, 422),
        ("tenant", {"project": "bad name!"}, 422),
    ],
)
def test_create_beyond_reach_or_role_is_refused(admin, who, body, status):
    before = ids(admin.call("GET", "/v1/tokens", "operator"))
    answer = admin.call("POST", "/v1/tokens", who, json=body)
    assert answer.status_code == status, answer.text
    assert "token" not in answer.json() and answer.json()["error"]["message"]
    assert ids(admin.call("GET", "/v1/tokens", "operator")) == before  # nothing was made


def test_revoke_within_reach_and_the_token_stops_working(admin):
    _, user_id = admin.tokens["user"]
    assert admin.call("DELETE", f"/v1/tokens/{user_id}", "other").status_code == 404  # not its tenant's
    assert admin.call("GET", "/v1/_routing", "user").status_code == 200
    revoked = admin.call("DELETE", f"/v1/tokens/{user_id}", "project")
    assert revoked.status_code == 200 and revoked.json()["revokedAt"]
    assert admin.call("GET", "/v1/_routing", "user").status_code == 401
    assert user_id not in ids(admin.call("GET", "/v1/tokens", "operator"))
    assert admin.call("DELETE", f"/v1/tokens/{user_id}", "project").status_code == 404  # already gone

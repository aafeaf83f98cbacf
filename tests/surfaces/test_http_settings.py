"""`/v1/settings` and `/v1/setting-forms` (issue 14): the console writes settings in one all-or-nothing
batch, admin tokens only, each level within its reach, secrets write-only, every write audited."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from zarniwoop.surfaces.http import create_app

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, write_config

WIKI = "/w/w/rest.php/v1/search/page"
SECRET = "serper-secret-0123456789"


@dataclass
class Console:
    client: TestClient
    tokens: dict[str, str]
    home: object

    def call(self, method: str, path: str, who: str, **kwargs):
        return self.client.request(
            method, path, headers={"Authorization": f"Bearer {self.tokens[who]}"}, **kwargs
        )


@pytest.fixture
def console(tmp_path, emulator) -> Iterator[Console]:
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora")))
    settings = {
        **only(),
        **endpoint("wiki-w", "wikipedia", f"{emulator.url}/w"),
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.encyclopedia": 0,
    }
    config = write_config(tmp_path, {"settings": settings})
    app = create_app(config=config, home=tmp_path / "home")
    with TestClient(app, raise_server_exceptions=False) as client:
        store = app.state.zarniwoop.runtime.tokens
        tokens = {
            who: client.portal.call(store.create, tenant, project, role).token  # type: ignore[union-attr]
            for who, (tenant, project, role) in {
                "operator": ("*", "*", "admin"),
                "tenant": ("acme", "*", "admin"),
                "admin": ("acme", "review", "admin"),
                "user": ("acme", "review", "user"),
            }.items()
        }
        yield Console(client, tokens, tmp_path / "home")


def test_forms_describe_every_installed_protocol(console):
    forms = {f["protocol"]: f for f in console.call("GET", "/v1/setting-forms", "admin").json()["forms"]}
    assert {"serper", "wikipedia", "openalex", "local"} <= set(forms)
    keys = [f["key"] for f in forms["serper"]["fields"]]
    assert keys[:2] == ["apiKey", "enabled"] and "rateLimit.perSecond" in keys
    api_key = forms["serper"]["fields"][0]
    assert api_key["type"] == "password" and api_key["secret"] is True
    assert console.call("GET", "/v1/setting-forms", "user").status_code == 403


def test_a_batch_disables_a_provider_and_the_next_search_skips_it(console, emulator):
    body = {"query": "aurora", "modality": "encyclopedia"}
    assert (
        console.call("POST", "/v1/research/search", "user", json=body).json()["providerInstanceId"]
        == "wiki-w"
    )
    assert len(emulator.requests(WIKI)) == 1
    written = console.call(
        "PUT",
        "/v1/settings",
        "admin",
        json={"level": "project", "set": {"research.endpoint.wiki-w.enabled": False}},
    )
    assert written.status_code == 200 and written.json() == {"written": 1}
    result = console.call("POST", "/v1/research/search", "user", json=body).json()
    assert result["providerInstanceId"] is None and result["hits"] == []
    assert "wiki-w" not in [a["providerInstanceId"] for a in result["attempts"]]  # not a candidate any more
    providers = console.call("GET", "/v1/research/providers", "user").json()["providers"]
    assert {p["id"]: p["availability"] for p in providers}["wiki-w"] == "DISABLED"
    assert len(emulator.requests(WIKI)) == 1
    rows = {r["key"]: r for r in console.call("GET", "/v1/settings", "admin").json()["settings"]}
    assert rows["research.endpoint.wiki-w.enabled"] == {
        "key": "research.endpoint.wiki-w.enabled",
        "value": "false",
        "type": "BOOL",
        "level": "project",
        "source": "settings set",
    }


def test_a_bad_batch_names_the_first_bad_key_and_writes_nothing(console):
    before = console.call("GET", "/v1/settings", "admin").json()["settings"]
    bad = console.call(
        "PUT",
        "/v1/settings",
        "admin",
        json={
            "level": "project",
            "set": {"research.endpoint.wiki-w.timeoutMs": 5000, "research.default.encyclopedia": "ghost"},
        },
    )
    assert bad.status_code == 422
    assert bad.json()["error"]["field"] == "research.default.encyclopedia"
    assert "'ghost', which is not defined" in bad.json()["error"]["message"]
    typo = console.call(
        "PUT", "/v1/settings", "admin", json={"level": "project", "set": {"research.deadlinems": 5}}
    )
    assert typo.status_code == 422 and typo.json()["error"] == {
        "field": "research.deadlinems",
        "message": "research.deadlinems: is not a known setting; did you mean research.deadlineMs?",
    }
    assert console.call("GET", "/v1/settings", "admin").json()["settings"] == before


def test_each_level_needs_its_reach_and_users_may_not_write(console):
    change = {"set": {"research.provenance": True}}
    assert console.call("PUT", "/v1/settings", "user", json={"level": "project", **change}).status_code == 403
    assert console.call("PUT", "/v1/settings", "admin", json={"level": "tenant", **change}).status_code == 403
    assert console.call("PUT", "/v1/settings", "admin", json={"level": "system", **change}).status_code == 403
    assert (
        console.call("PUT", "/v1/settings", "tenant", json={"level": "tenant", **change}).status_code == 200
    )
    assert (
        console.call("PUT", "/v1/settings", "tenant", json={"level": "system", **change}).status_code == 403
    )
    assert (
        console.call("PUT", "/v1/settings", "operator", json={"level": "system", **change}).status_code == 200
    )
    assert console.call("GET", "/v1/settings?level=system", "admin").status_code == 403


def test_a_key_is_write_only_and_audited_without_its_value(console):
    put = console.call(
        "PUT",
        "/v1/settings",
        "admin",
        json={"level": "project", "set": {"research.endpoint.serper.apiKey": SECRET}},
    )
    assert put.status_code == 200
    listing = console.call("GET", "/v1/settings", "admin")
    assert SECRET not in listing.text
    row = next(r for r in listing.json()["settings"] if r["key"] == "research.endpoint.serper.apiKey")
    assert row == {
        "key": "research.endpoint.serper.apiKey",
        "set": True,
        "type": "PASSWORD",
        "level": "project",
        "source": "settings set",
    }
    database = console.home / "zarniwoop.db"  # type: ignore[operator]
    assert SECRET.encode() not in database.read_bytes()
    with sqlite3.connect(database) as conn:
        audit = conn.execute("SELECT tenant, project, keys, token_id FROM settings_changes").fetchall()
    assert audit == [("acme", "review", "research.endpoint.serper.apiKey", audit[0][3])]
    assert audit[0][3].startswith("tok_")

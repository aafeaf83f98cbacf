"""The operator's limits are a ceiling on the operator's key (issue 25 item 8, `config/ceilings.py`):
the operator runs `srp` with its own Serper key, `quota.daily: 3`, and lets tenants use it. A tenant
admin may lower the budget and the pace, never raise them (422 naming the key and the operator's
value); the effective limit is the minimum over the levels. Real HTTP surface (`TestClient`), the
loopback emulator as Serper."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from zarniwoop.surfaces.http import create_app

from ..support.emulator import Emulator, Reply
from ..support.runtime import endpoint, only, write_config

OPERATOR_KEY = "sk-operator-serper-0123456789"
QUOTA = "research.endpoint.srp.quota.daily"
RATE = "research.endpoint.srp.rateLimit.perSecond"


@dataclass
class Console:
    client: TestClient
    emulator: Emulator
    admin: dict[str, str]
    user: dict[str, str]

    def put(self, values: dict[str, Any], level: str = "tenant") -> Any:
        return self.client.put("/v1/settings", headers=self.admin, json={"level": level, "set": values})

    def searches(self, count: int) -> list[str]:
        """`count` different web searches of the tenant's user; the provider that answered each."""
        answered = []
        for i in range(count):
            body = {"query": f"ceiling {i}", "modality": "web", "cache": False}
            result = self.client.post("/v1/research/search", json=body, headers=self.user).json()
            answered.append(result.get("providerInstanceId") or result["attempts"][0]["outcome"])
        return answered


@pytest.fixture
def console(tmp_path, emulator, monkeypatch) -> Iterator[Console]:
    monkeypatch.setenv("SERPER_API_KEY", OPERATOR_KEY)
    emulator.add("/search", Reply.json({"organic": [{"title": "t", "link": "https://example.org/"}]}))
    settings = {
        **only(),
        **endpoint("srp", "serper", emulator.url, quota__daily=3, rateLimit__perSecond=50),
        "research.operatorKeys": "allow",
    }
    config = write_config(tmp_path, {"settings": settings, "tenants": {"acme": {"projects": {"p1": {}}}}})
    app = create_app(config=config, home=tmp_path / "home")
    with TestClient(app, raise_server_exceptions=False) as client:
        store = app.state.zarniwoop.runtime.tokens
        admin = client.portal.call(store.create, "acme", "*", "admin").token  # type: ignore[union-attr]
        user = client.portal.call(store.create, "acme", "p1", "user").token  # type: ignore[union-attr]
        yield Console(
            client, emulator, {"Authorization": f"Bearer {admin}"}, {"Authorization": f"Bearer {user}"}
        )


def test_a_tenant_cannot_raise_the_operators_quota_and_its_searches_stop_at_three(console: Console) -> None:
    for key, value, shown in ((QUOTA, 100000, "3"), (RATE, 100000, "50"), (RATE, 0, "50")):
        put = console.put({key: value})
        assert put.status_code == 422, put.text
        error = put.json()["error"]
        assert error["field"] == key
        assert f"the operator's limit on the operator's key is {shown}" in error["message"]
        assert f"not raise it to {value}" in error["message"]
    # a project may not either
    put = console.put({QUOTA: 4}, level="project")
    assert put.status_code == 422 and put.json()["error"]["field"] == QUOTA
    answered = console.searches(8)
    assert answered == ["srp"] * 3 + ["skipped_exhausted"] * 5
    requests = console.emulator.requests("/search")
    assert len(requests) == 3 and {r.header("x-api-key") for r in requests} == {OPERATOR_KEY}


def test_a_tenant_lowering_the_operators_quota_gets_its_own_lower_budget(console: Console) -> None:
    assert console.put({QUOTA: 2, RATE: 10}).status_code == 200
    answered = console.searches(8)
    assert answered == ["srp"] * 2 + ["skipped_exhausted"] * 6
    assert len(console.emulator.requests("/search")) == 2


def test_on_its_own_key_a_tenant_sets_its_own_budget(console: Console) -> None:
    put = console.put({"research.endpoint.srp.apiKey": "sk-tenant-own-key-0123456789", QUOTA: 5})
    assert put.status_code == 200, put.text
    assert console.searches(8) == ["srp"] * 5 + ["skipped_exhausted"] * 3
    requests = console.emulator.requests("/search")
    assert {r.header("x-api-key") for r in requests} == {"sk-tenant-own-key-0123456789"}

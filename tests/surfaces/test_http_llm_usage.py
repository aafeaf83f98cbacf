"""`GET /v1/usage` carries the LLM dashboard (seed 002 §9) of the token's project; the tenant-wide
view needs an admin token."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.manager import LlmCall
from zarniwoop.surfaces.http import create_app
from zarniwoop.tenancy.tokens import TokenStore

from ..support.llm import ANTHROPIC_PATH, KEYS, anthropic_reply, seed_tenants
from ..support.runtime import write_config


def test_usage_has_the_llm_dashboard_of_the_tokens_project(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())  # 41 tokens a call
    config = write_config(tmp_path, {"settings": {}, "tenants": seed_tenants(emulator)})
    app = create_app(config=config, home=tmp_path / "home")
    with TestClient(app, raise_server_exceptions=False) as client:
        runtime = app.state.zarniwoop.runtime
        store = TokenStore(runtime.db)
        token = {
            who: client.portal.call(store.create, "acme", project, role).token  # type: ignore[union-attr]
            for who, (project, role) in {
                "user": ("transformer-review", "user"),
                "admin": ("transformer-review", "admin"),
            }.items()
        }

        async def calls() -> None:
            for (level, owner, name), value in KEYS.items():
                await runtime.credentials.set("acme", level, owner, name, value)
            manager = await runtime.llm()
            for project in ("transformer-review", "transformer-review", "architecture"):
                await manager.chat(LlmCall("acme", project, "mike"), ChatRequest.prompt("x"))

        client.portal.call(calls)  # type: ignore[union-attr]

        def get(who: str, **params: str):
            return client.get("/v1/usage", headers={"Authorization": f"Bearer {token[who]}"}, params=params)

        llm = get("user").json()["llm"]
        assert llm["scope"] == {"level": "project", "name": "transformer-review"}
        assert (llm["month"]["totalTokens"], llm["month"]["limit"]) == (82, 5_000_000)
        assert llm["month"]["byAccount"] == [{"account": "mike", "tokens": 82}]
        assert llm["month"]["estimatedCostUsd"] == pytest.approx(2 * (12 * 3.0 + 29 * 15.0) / 1_000_000)
        assert {(q["scope"], q["period"]) for q in llm["quotas"]} == {
            ("project/transformer-review", "monthly")
        }

        denied = get("user", llmScope="tenant")
        assert denied.status_code == 403
        assert denied.json() == {"error": {"message": "the tenant-wide LLM usage needs an admin token"}}
        tenant = get("admin", llmScope="tenant").json()["llm"]
        assert tenant["scope"] == {"level": "tenant", "name": None}
        assert {p["project"]: p["tokens"] for p in tenant["today"]["byProject"]} == {
            "transformer-review": 82,
            "architecture": 41,
        }
        mike_here = get("user", account="mike").json()[
            "llm"
        ]  # a user token sees the account within its project
        assert mike_here["today"]["totalTokens"] == 82
        mike_all = get("admin", account="mike").json()["llm"]
        assert (mike_all["today"]["totalTokens"], mike_all["today"]["limit"]) == (123, 500_000)
        assert get("user", llmScope="galaxy").status_code == 422

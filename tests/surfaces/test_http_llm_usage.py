"""`GET /v1/usage` carries the LLM dashboard (seed 002 §9) of the token's project; the tenant-wide
view needs a tenant-admin token, and a user token bound to an account sees that account only."""

from __future__ import annotations

import functools

import pytest
from fastapi.testclient import TestClient

from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.manager import LlmCall
from zarniwoop.surfaces.http import create_app
from zarniwoop.tenancy.tokens import TokenStore

from ..support.llm import ANTHROPIC_PATH, KEYS, anthropic_reply, seed_tenants, trusting
from ..support.runtime import write_config


def test_usage_has_the_llm_dashboard_of_the_tokens_project(tmp_path, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())  # 41 tokens a call
    config = write_config(tmp_path, {"settings": trusting(), "tenants": seed_tenants(emulator)})
    app = create_app(config=config, home=tmp_path / "home")
    with TestClient(app, raise_server_exceptions=False) as client:
        runtime = app.state.zarniwoop.runtime
        store = TokenStore(runtime.db)
        token = {
            who: client.portal.call(  # type: ignore[union-attr]
                functools.partial(store.create, "acme", project, role, account=account)
            ).token
            for who, (project, role, account) in {
                "user": ("transformer-review", "user", None),
                "mike": ("transformer-review", "user", "mike"),
                "lisa": ("transformer-review", "user", "lisa"),
                "admin": ("transformer-review", "admin", None),
                "tenant-admin": ("*", "tenant-admin", None),
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

        for who in ("user", "admin"):  # a project admin sees its project, not the tenant
            denied = get(who, llmScope="tenant")
            assert denied.status_code == 403
            assert denied.json() == {
                "error": {"message": "the tenant-wide LLM usage needs a tenant-admin token"}
            }
        tenant = get("tenant-admin", llmScope="tenant").json()["llm"]
        assert tenant["scope"] == {"level": "tenant", "name": None}
        assert {p["project"]: p["tokens"] for p in tenant["today"]["byProject"]} == {
            "transformer-review": 82,
            "architecture": 41,
        }
        # a user token acting as mike sees mike's calls in its project, asked or not
        assert get("mike", account="mike").json()["llm"]["today"]["totalTokens"] == 82
        assert get("mike").json()["llm"]["today"]["byAccount"] == [{"account": "mike", "tokens": 82}]
        for who, asked in (("lisa", "mike"), ("mike", "lisa"), ("user", "mike")):
            assert get(who, account=asked).status_code == 403, (who, asked)  # was 200: anyone's usage
        assert get("lisa").json()["llm"]["today"]["totalTokens"] == 0
        assert get("admin", account="mike").json()["llm"]["today"]["totalTokens"] == 82  # its project
        mike_all = get("tenant-admin", account="mike").json()["llm"]
        assert (mike_all["today"]["totalTokens"], mike_all["today"]["limit"]) == (123, 500_000)
        assert get("user", llmScope="galaxy").status_code == 422

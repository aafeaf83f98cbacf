"""The call API a front end (CLI, recipe, gateway) uses: `LlmCall.model` takes any spec the alias
resolver does, or `purpose:<name>`; `choose_model` says where a call would land without calling."""

from __future__ import annotations

import pytest

from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.manager import LlmCall

from ..support.llm import gemini_path, gemini_reply, manager_for, open_llm_runtime, seed_tenants

pytestmark = pytest.mark.anyio


async def test_purpose_spec_takes_the_purposes_model_and_runs_as_that_purpose(tmp_path, emulator):
    emulator.add(gemini_path("gemini-2.5-flash"), gemini_reply())
    async with await open_llm_runtime(tmp_path, seed_tenants(emulator)) as runtime:
        manager = await manager_for(runtime)
        call = LlmCall(tenant="acme", project="architecture", account="mike", model="purpose:light")
        choice = await manager.choose_model(call)
        assert (choice.spec, choice.purpose, choice.resolution.model) == (
            "gemini:gemini-2.5-flash",
            "light",
            "gemini-2.5-flash",
        )  # Mike's light_model preference
        assert choice.doc is not None and choice.doc.size is not None and choice.doc.size.value == "SMALL"
        assert emulator.requests() == []  # choosing calls nothing
        result = await manager.chat(call, ChatRequest.prompt("x"))
        assert (result.purpose, result.instance, result.model) == ("light", "gemini", "gemini-2.5-flash")
        row = await runtime.db.fetchone(
            "SELECT purpose FROM llm_usage_records WHERE id = ?", (result.usage_id,)
        )
        assert row == ("light",)


async def test_a_comma_cascade_spec_takes_its_first_configured_element(tmp_path, emulator):
    emulator.add(gemini_path("gemini-2.5-pro"), gemini_reply())
    async with await open_llm_runtime(tmp_path, seed_tenants(emulator)) as runtime:
        manager = await manager_for(runtime)
        call = LlmCall(
            tenant="acme",
            project="architecture",
            account="mike",
            model="default:arthur,gemini:gemini-2.5-pro",
        )
        result = await manager.chat(call, ChatRequest.prompt("x"))
        assert (result.spec, result.instance, result.model) == (
            "default:arthur,gemini:gemini-2.5-pro",
            "gemini",
            "gemini-2.5-pro",
        )

"""Boot validation of `ai.*` settings: unknown provider types and broken alias chains name the key."""

from __future__ import annotations

import pytest

from zarniwoop.llm.validate import validate_ai_settings

from ..support.runtime import open_runtime

pytestmark = pytest.mark.anyio


async def test_ai_settings_problems_name_the_key_and_the_reason(tmp_path):
    system = {
        "ai.provider.gw.type": "grpc",
        "ai.provider.deepseek-direct.type": "openai",
        "ai.default.provider": "nobody",
        "ai.default.model": "m",
        "ai.alias.default.a": "default:b",
        "ai.alias.default.b": "default:a",
        "ai.alias.default.later": "default:set-in-a-tenant",  # not configured here: fine
        "ai.alias.default.ok": "deepseek-direct:deepseek-v4-flash",
    }
    tenant = {"ai.default.provider": "anthropic", "ai.alias.default.deep": "x:y:z"}
    async with await open_runtime(tmp_path) as rt:  # boot would refuse these: write them behind its back
        for key, value in system.items():
            await rt.settings.set("_system", "_tenant", key, value)
        for key, value in tenant.items():
            await rt.settings.set("acme", "_tenant", key, value)
        problems = {e.key: e.reason for e in validate_ai_settings(rt.settings)}
    assert problems == {
        "ai.provider.gw.type": "unknown provider type 'grpc'; expected one of openai, anthropic, gemini, ollama, ollama-cloud, lmstudio",
        "ai.default.provider": "'nobody' is neither a provider type (openai, anthropic, gemini, ollama, ollama-cloud, "
        "lmstudio) nor a named instance (setting ai.provider.nobody.type)",
        "ai.alias.default.a": "alias cycle: default:a → default:b → default:a",
        "ai.alias.default.b": "alias cycle: default:b → default:a → default:b",
    }


async def test_valid_ai_settings_report_nothing(tmp_path):
    system = {
        "ai.default.provider": "gemini",
        "ai.default.model": "gemini-2.5-flash",
        "ai.alias.default.chat": "anthropic:claude-haiku-4-5,openai:gpt-4o-mini",
    }
    async with await open_runtime(tmp_path, system) as rt:
        assert validate_ai_settings(rt.settings) == []

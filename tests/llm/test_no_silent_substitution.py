"""No silent substitution (issue 15): a spec whose provider has no key anywhere fails, naming the
provider and every place searched, and calls nothing — unless the tenant sets `ai.substitute: true`,
and then the switch is on the result's `failover` and on the usage record."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from zarniwoop.runtime import Runtime
from zarniwoop.surfaces.cli import app

from ..support.llm import ANTHROPIC_PATH, KEYS, anthropic_reply, ask_as, seed_tenants, trusting
from ..support.runtime import write_config


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("ZARNIWOOP_HOME", str(home))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return home


def invoke(config: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(
        app, ["--config", str(config), "--tenant", "acme", *args], input=input, catch_exceptions=False
    )


def config_with_keys(tmp_path: Path, emulator, **settings: object) -> Path:
    tenants = seed_tenants(emulator)
    tenants["acme"]["settings"].update(settings)
    config = write_config(tmp_path, {"settings": trusting(), "tenants": tenants})
    for (level, owner, name), value in KEYS.items():
        args = ["credentials", "set", name] + ([f"--{level}", owner] if owner else [])
        assert invoke(config, *args, input=value + "\n").exit_code == 0
    return config


ASK = ask_as("mike", "--project", "architecture", "--model", "openai:gpt-4o", "--json")


def test_a_provider_without_a_key_exits_4_naming_it_and_the_levels_and_calls_nothing(
    tmp_path, home, emulator
):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    config = config_with_keys(tmp_path, emulator)
    result = invoke(config, *ASK)
    assert result.exit_code == 4, result.stdout
    assert result.stdout == ""
    assert result.stderr.strip() == (
        "error: no key for provider 'openai' (model spec 'openai:gpt-4o'); searched: account mike, project "
        "architecture, team nlp, tenant acme, setting ai.provider.openai.apiKey, operator environment "
        "OPENAI_API_KEY. Store one (zarniwoop credentials set) or set ai.substitute: true to let another "
        "provider serve"
    )
    assert emulator.requests() == []  # no upstream call at all — not anthropic, not gemini


def test_with_ai_substitute_the_switch_is_in_failover_and_on_the_usage_record(tmp_path, home, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    config = config_with_keys(tmp_path, emulator, **{"ai.substitute": True})
    result = invoke(config, *ASK)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["instance"], data["model"], data["credentialSource"]) == (
        "anthropic",
        "claude-sonnet-4-5",
        "account",
    )
    switch = {"from": "openai", "to": "anthropic", "reason": "no openai key (ai.substitute)"}
    assert data["failover"] == [switch]

    async def records() -> list:
        async with await Runtime.open(config, home=home) as runtime:
            return await runtime.db.fetchall("SELECT instance, model, failover FROM llm_usage_records")

    [(instance, model, failover)] = asyncio.run(records())
    assert (instance, model, json.loads(failover)) == ("anthropic", "claude-sonnet-4-5", [switch])

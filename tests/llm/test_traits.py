"""Model traits (seed 002 §7a): bundled from the seed's table, overridable per layer and key, shown
by `models show`, and a weak-context-discipline research alias is reported — logged once and as
routing data."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from zarniwoop import operations
from zarniwoop.contract.errors import DocumentError
from zarniwoop.contract.query import SearchScope
from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.catalog import validate_document
from zarniwoop.llm.manager import LlmCall
from zarniwoop.llm.traits import discipline_warnings
from zarniwoop.surfaces.cli import app

from ..support.llm import gemini_path, gemini_reply, manager_for, open_llm_runtime, seed_tenants
from ..support.runtime import write_config

pytestmark = pytest.mark.anyio


def invoke(config: Path, *args: str):
    return CliRunner().invoke(
        app, ["--config", str(config), "--tenant", "acme", *args], catch_exceptions=False
    )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("ZARNIWOOP_HOME", str(home))
    return home


def test_models_show_has_the_seeds_traits_and_a_tenant_layer_overrides_one_key(tmp_path, home):
    config = write_config(tmp_path, {"settings": {}, "tenants": {"acme": {}}})
    shown = invoke(config, "models", "show", "gemini/gemini-2.5-pro", "--json")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["traits"] == {
        "contextDiscipline": "weak",
        "toolLoopPersistence": "medium",
    }
    opus = json.loads(invoke(config, "models", "show", "anthropic/claude-opus-4-7", "--json").stdout)
    assert opus["traits"] == {"contextDiscipline": "strong", "toolLoopPersistence": "very-strong"}

    override = home / "documents" / "acme" / "_tenant" / "model" / "gemini" / "gemini-2.5-pro.yaml"
    override.parent.mkdir(parents=True)
    override.write_text(yaml.safe_dump({"traits": {"contextDiscipline": "Medium"}}))
    merged = json.loads(invoke(config, "models", "show", "gemini/gemini-2.5-pro", "--json").stdout)
    assert merged["traits"] == {
        "contextDiscipline": "medium",
        "toolLoopPersistence": "medium",
    }  # one key replaced
    human = invoke(config, "models", "show", "gemini/gemini-2.5-pro").stdout
    assert "context discipline       medium" in human
    assert "tool-loop persistence    medium" in human


def test_a_trait_outside_the_vocabulary_names_the_field():
    with pytest.raises(DocumentError) as caught:
        validate_document({"traits": {"contextDiscipline": "excellent"}}, frozenset())
    assert str(caught.value) == (
        "traits.contextDiscipline must be one of weak, medium, strong, very-strong, variable, got 'excellent'"
    )


async def test_a_research_alias_on_a_weak_model_is_logged_once_and_is_routing_data(
    tmp_path, emulator, caplog
):
    emulator.add(gemini_path("gemini-2.5-pro"), gemini_reply())
    tree = seed_tenants(emulator)
    tree["acme"]["settings"]["ai.alias.default.analyze"] = "gemini:gemini-2.5-pro"
    tree["acme"]["settings"]["ai.alias.default.deep"] = "anthropic:claude-opus-4-7"
    async with await open_llm_runtime(tmp_path, tree) as runtime:
        manager = await manager_for(runtime)
        call = LlmCall(tenant="acme", project="architecture", account="mike", model="default:analyze")
        with caplog.at_level(logging.WARNING, logger="zarniwoop.llm.traits"):
            await manager.chat(call, ChatRequest.prompt("x"))
            await manager.chat(call, ChatRequest.prompt("y"))
        warned = [r.getMessage() for r in caplog.records if r.name == "zarniwoop.llm.traits"]
        assert warned == [
            "default:analyze resolves to gemini:gemini-2.5-pro, whose context discipline is weak: it may "
            "overrule fresh research results with its training (seed 002 §7a); bind research aliases to a "
            "model with strong context discipline"
        ]
        scope = SearchScope("acme", "architecture")
        catalog = await runtime.catalog()
        found = discipline_warnings(runtime.settings.scoped(scope), catalog, scope)
        assert [(w.alias, w.instance, w.model) for w in found] == [
            ("default:analyze", "gemini", "gemini-2.5-pro")
        ]
        view = await operations.routing_report(runtime, scope, admin=True)
        assert [w["alias"] for w in view["llm"]["warnings"]] == ["default:analyze"]  # default:deep is strong

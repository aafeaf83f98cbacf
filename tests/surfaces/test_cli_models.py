"""`zarniwoop models resolve/show/list/refresh/discover` (DESIGN §6): JSON shapes, exit codes, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app

from ..support.emulator import Reply
from ..support.paths import fixture_bytes

SETTINGS = {
    "ai.default.provider": "gemini",
    "ai.default.model": "gemini-2.5-flash",
    "ai.alias.default.chat": "anthropic:claude-haiku-4-5,openai:gpt-4o-mini",
    "ai.provider.deepseek-direct.type": "openai",
}


def config_file(tmp_path: Path, settings: dict, tenants: dict | None = None) -> Path:
    path = tmp_path / "zarniwoop.yaml"
    path.write_text(yaml.safe_dump({"settings": settings, "tenants": tenants or {}}))
    return path


def invoke(config: Path, *args: str):
    return CliRunner().invoke(app, ["--config", str(config), *args], catch_exceptions=False)


def test_resolve_json_prints_the_contract_shape(tmp_path, home):
    result = invoke(
        config_file(tmp_path, SETTINGS), "models", "resolve", "default:arthur,default:chat", "--json"
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {
        "spec": "default:arthur,default:chat",
        "providerType": "anthropic",
        "instance": "anthropic",
        "model": "claude-haiku-4-5",
        "path": ["default:arthur", "default:chat", "anthropic:claude-haiku-4-5"],
    }
    assert not (home / "documents").exists()  # resolving never loads the catalog


def test_resolve_uses_the_scope_of_tenant_and_project(tmp_path, home):
    tenants = {
        "acme": {
            "settings": {"ai.alias.default.arthur": "anthropic:claude-opus-4"},
            "projects": {
                "review": {"settings": {"ai.alias.default.arthur": "deepseek-direct:deepseek-v4-pro"}}
            },
        }
    }
    config = config_file(tmp_path, SETTINGS, tenants)
    base = ["models", "resolve", "default:arthur,default:chat", "--json"]
    tenant = CliRunner().invoke(
        app, ["--config", str(config), "--tenant", "acme", "--project", "_tenant", *base]
    )
    project = CliRunner().invoke(
        app, ["--config", str(config), "--tenant", "acme", "--project", "review", *base]
    )
    other = CliRunner().invoke(app, ["--config", str(config), "--tenant", "globex", *base])
    assert json.loads(tenant.stdout)["model"] == "claude-opus-4"
    assert json.loads(project.stdout) | {"path": None} == {
        "spec": "default:arthur,default:chat",
        "providerType": "openai",
        "instance": "deepseek-direct",
        "model": "deepseek-v4-pro",
        "path": None,
    }
    assert json.loads(other.stdout)["model"] == "claude-haiku-4-5"


def test_resolve_human_output_shows_target_and_path(tmp_path, home):
    result = invoke(config_file(tmp_path, SETTINGS), "models", "resolve", "default:nothing")
    assert result.exit_code == 0
    assert result.stdout == (
        "default:nothing → gemini:gemini-2.5-flash  (provider type gemini)\n"
        "path: default:nothing → gemini:gemini-2.5-flash\n"
    )


@pytest.mark.parametrize(
    ("settings", "spec", "message"),
    [
        (
            {},
            "cheap:lookup",
            "error: cannot resolve model spec 'cheap:lookup': 'cheap:lookup' is neither a provider type (openai, "
            "anthropic, gemini, ollama, ollama-cloud, lmstudio), a named instance (setting ai.provider.cheap.type) "
            "nor an alias (setting ai.alias.cheap.lookup)\n",
        ),
        (
            {"ai.alias.default.a": "default:b", "ai.alias.default.b": "default:c"},
            "default:a",
            "error: cannot resolve model spec 'default:a': default:c is not configured and there is no tenant "
            "default (settings ai.default.provider and ai.default.model)\n",
        ),
        (
            {},
            "default:chat",
            "error: cannot resolve model spec 'default:chat': default:chat is not configured and there is no tenant "
            "default (settings ai.default.provider and ai.default.model)\n",
        ),
    ],
)
def test_an_unresolvable_spec_exits_2_naming_the_spec_and_why(tmp_path, home, settings, spec, message):
    result = invoke(config_file(tmp_path, settings), "models", "resolve", spec, "--json")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == message


def test_an_alias_cycle_in_the_config_is_refused_at_start_up(tmp_path, home):
    settings = {"ai.alias.default.a": "default:b", "ai.alias.default.b": "default:a"}
    result = invoke(config_file(tmp_path, settings), "models", "resolve", "default:a", "--json")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "error: config error: ai.alias.default.a: alias cycle: default:a → default:b → default:a"
    )


def test_show_prints_the_merged_entry_by_instance_and_model_or_by_spec(tmp_path, home):
    config = config_file(tmp_path, SETTINGS)
    by_name = invoke(config, "models", "show", "anthropic/claude-haiku-4-5", "--json")
    assert by_name.exit_code == 0, by_name.stderr
    doc = json.loads(by_name.stdout)
    assert {k: doc[k] for k in ("instance", "wireName", "contextWindowTokens", "size", "layers")} == {
        "instance": "anthropic",
        "wireName": "claude-haiku-4-5",
        "contextWindowTokens": 200000,
        "size": "SMALL",
        "layers": ["bundled", "_system/_tenant manual"],  # bundled + its first-boot copy
    }
    assert doc["pricing"] == {
        "currency": "USD",
        "inputPerMTok": 1.0,
        "outputPerMTok": 5.0,
        "cacheReadPerMTok": 0.1,
        "cacheWritePerMTok": 1.25,
    }
    by_spec = invoke(config, "models", "show", "default:chat", "--json")
    assert json.loads(by_spec.stdout) == doc
    tagged = invoke(config, "models", "show", "ollama/gpt-oss:120b-cloud", "--json")
    assert json.loads(tagged.stdout)["messageParser"] == "harmony"
    human = invoke(config, "models", "show", "openai/gpt-4o")
    assert "context window           128,000" in human.stdout
    assert "pricing (per 1M tokens)  in 2.5 / out 10.0 USD" in human.stdout


def test_show_of_an_unknown_model_exits_2(tmp_path, home):
    result = invoke(config_file(tmp_path, SETTINGS), "models", "show", "openai/gpt-9000")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: no catalog entry for openai/gpt-9000 in scope default/default")


def test_list_json_lists_the_bundled_models_and_filters_by_instance(tmp_path, home):
    config = config_file(tmp_path, SETTINGS)
    everything = json.loads(invoke(config, "models", "list", "--json").stdout)["models"]
    assert len(everything) == 54
    assert {m["instance"] for m in everything} == {
        "openai",
        "anthropic",
        "gemini",
        "ollama",
        "ollama-cloud",
        "lmstudio",
        "deepseek",
    }
    gemini = json.loads(invoke(config, "models", "list", "--instance", "gemini", "--json").stdout)["models"]
    assert [m["wireName"] for m in gemini][:3] == [
        "gemini-2.5-flash",
        "gemini-2.5-flash-lite",
        "gemini-2.5-pro",
    ]
    table = invoke(config, "models", "list", "--instance", "anthropic")
    assert table.exit_code == 0 and "claude-opus-4-7" in table.stdout


def test_refresh_reports_counts_and_names_skipped_files(tmp_path, home):
    config = config_file(tmp_path, SETTINGS)
    assert invoke(config, "models", "list", "--json").exit_code == 0  # first use bootstraps
    bad = home / "documents" / "acme" / "_tenant" / "model" / "openai" / "gpt-4o.yaml"
    bad.parent.mkdir(parents=True)
    bad.write_text("size: ENORMOUS\n")
    result = invoke(config, "models", "refresh", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["bundledModelsLoaded"], report["bundledProvidersLoaded"], report["overrideScopes"]) == (
        54,
        7,
        1,
    )
    assert report["documentsLoaded"] == 108
    assert report["skipped"] == [
        {"file": str(bad), "reason": "unknown size 'ENORMOUS'; expected SMALL or LARGE"}
    ]
    assert report["refreshedAt"].endswith("Z") and report["durationMs"] >= 0
    human = invoke(config, "models", "refresh")
    assert f"skipped {bad}: unknown size 'ENORMOUS'; expected SMALL or LARGE" in human.stderr


def test_discover_reports_instances_and_skipped_ones(tmp_path, home, emulator):
    emulator.add("/ollama/api/tags", Reply(body=fixture_bytes("llm", "ollama", "api-tags.json")))
    emulator.add(
        "/anthropic/v1/models",
        Reply(status=401, body=fixture_bytes("llm", "errors", "anthropic-401-invalid-api-key.json")),
    )
    settings = {
        "ai.provider.ollama.baseUrl": f"{emulator.url}/ollama",
        "ai.provider.anthropic.baseUrl": f"{emulator.url}/anthropic",
        "ai.provider.anthropic.apiKey": "sk-ant-nope",
    }
    config = config_file(tmp_path, settings)
    result = invoke(config, "models", "discover", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["scopes"][0]["instances"][0] | {"durationMs": 0} == {
        "instance": "ollama",
        "providerType": "ollama",
        "models": 2,
        "written": 2,
        "removed": 0,
        "durationMs": 0,
    }
    assert report["scopes"][0]["skippedInstances"] == [
        {
            "instance": "anthropic",
            "providerType": "anthropic",
            "error": "HTTP 401 (key missing, wrong or not allowed)",
        }
    ]
    assert "sk-ant-nope" not in result.stdout
    shown = json.loads(invoke(config, "models", "show", "ollama/deepseek-r1:latest", "--json").stdout)
    assert (shown["stripThinkTags"], shown["layers"]) == (True, ["_system/_tenant auto"])
    human = invoke(config, "models", "discover", "--level", "system")
    assert human.stdout == (
        "_system/_tenant:\n"
        "  ollama (ollama): 2 models, 2 written, 0 removed\n"
        "  skipped anthropic: HTTP 401 (key missing, wrong or not allowed)\n"
    )
    nothing = invoke(config, "models", "discover", "--level", "project")
    assert nothing.stdout == "default/default:\n"
    bad_level = invoke(config, "models", "discover", "--level", "galaxy")
    assert bad_level.exit_code == 2


def test_the_cli_does_not_import_the_llm_layer_until_a_models_command_runs():
    code = (
        "import sys, zarniwoop.surfaces.cli; print(any(m.startswith('zarniwoop.llm') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_show_names_the_layer_that_set_each_field(tmp_path, home):
    config = config_file(tmp_path, SETTINGS)
    manual = home / "documents" / "_system" / "_tenant" / "model" / "openai"
    project = home / "documents" / "default" / "default" / "model-auto" / "openai"
    project.mkdir(parents=True)
    (project / "gpt-4o.yaml").write_text("contextWindowTokens: 64000\npricing: {inputPerMTok: 2.0}\n")
    shown = invoke(config, "models", "show", "openai/gpt-4o", "--json")
    assert shown.exit_code == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert (manual / "gpt-4o.yaml").exists()  # the first-boot copy: the system manual layer
    assert doc["contextWindowTokens"] == 64000 and doc["pricing"]["outputPerMTok"] == 10.0
    assert {
        k: doc["fieldLayers"][k]
        for k in ("contextWindowTokens", "pricing.inputPerMTok", "pricing.outputPerMTok")
    } == {
        "contextWindowTokens": "default/default auto",
        "pricing.inputPerMTok": "default/default auto",
        "pricing.outputPerMTok": "_system/_tenant manual",
    }
    human = invoke(config, "models", "show", "openai/gpt-4o").stdout
    assert "context window           64,000   [default/default auto]" in human
    assert "size                     LARGE   [_system/_tenant manual]" in human

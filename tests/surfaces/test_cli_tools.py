"""The CLI's tool commands (`rich`, `tools list/call`) and `routing --json`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app
from zarniwoop.tools import TOOLS

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, write_config

WIKI = "/w/w/rest.php/v1/search/page"


@pytest.fixture
def config(tmp_path, emulator):
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora")))
    emulator.add("/bad/w/rest.php/v1/search/page", Reply(status=503))
    settings = {
        **only(),
        **endpoint("flaky", "wikipedia", f"{emulator.url}/bad"),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/w"),
        "research.cache.ttlSeconds": 0,
        "ai.default.provider": "anthropic",
        "ai.default.model": "claude-sonnet-4-5",
        "ai.alias.default.chat": "openai:gpt-4o",
        "ai.provider.openai.displayName": "Company OpenAI",
    }
    return str(write_config(tmp_path, {"settings": settings}))


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_tools_list_json_is_the_published_schemas():
    result = invoke("tools", "list", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"tools": [spec.definition() for spec in TOOLS]}


def test_tools_call_prints_the_text_or_the_json(config):
    text = invoke(
        "--config", config, "tools", "call", "research_search", '{"query": "aurora", "modality": "web"}'
    )
    assert text.exit_code == 0, text.output
    assert text.stdout.startswith("[1] Aurora\n")
    data = invoke(
        "--config",
        config,
        "tools",
        "call",
        "research_search",
        '{"query": "aurora", "modality": "web"}',
        "--json",
    )
    assert json.loads(data.stdout)["providerInstanceId"] == "wiki"


def test_tools_call_bad_input_is_one_line_and_exit_2(config):
    bad = invoke(
        "--config", config, "tools", "call", "research_search", '{"query": "aurora", "modality": "sniff"}'
    )
    assert bad.exit_code == 2
    assert bad.stderr.startswith("error: modality: expected one of WEB, IMAGE")
    assert len(bad.stderr.strip().splitlines()) == 1
    not_json = invoke("--config", config, "tools", "call", "research_search", "{query")
    assert not_json.exit_code == 2 and not_json.stderr.startswith("error: arguments: not valid JSON")
    unknown = invoke("--config", config, "tools", "call", "research_pictures", "{}")
    assert unknown.exit_code == 2 and unknown.stderr.startswith(
        "error: name: unknown tool 'research_pictures'"
    )


def test_rich_groups_by_modality(config):
    result = invoke("--config", config, "rich", "aurora", "-n", "1")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("## WEB — 1 hit\n\n[1] Aurora")
    assert (
        "## IMAGE — 0 hits\n\nNo results for 'aurora' (IMAGE): no provider instance serves IMAGE"
        in result.stdout
    )


def test_routing_json(config):
    search = invoke("--config", config, "search", "aurora", "-m", "web", "--json")
    assert json.loads(search.stdout)["providerInstanceId"] == "wiki"
    result = invoke("--config", config, "routing", "--json")
    view = json.loads(result.stdout)
    assert set(view) == {"scope", "search", "searchCascades", "tiers", "llm"}
    assert view["llm"]["default"] == {
        "providerType": "anthropic",
        "instance": "anthropic",
        "model": "claude-sonnet-4-5",
        "path": ["anthropic:claude-sonnet-4-5"],
        "displayName": None,
    }
    assert [(a["alias"], a["target"], a["model"], a["displayName"]) for a in view["llm"]["aliases"]] == [
        ("default:chat", "openai:gpt-4o", "gpt-4o", "Company OpenAI")
    ]
    rows = {r["id"]: r for r in view["search"]}
    # a CLI process starts fresh: no call has been made in it, so reachability is unknown
    assert rows["flaky"]["reachable"] is None and rows["flaky"]["lastError"] is None
    web = [(s["id"], s["gate"], s["selected"]) for s in view["searchCascades"]["WEB"]]
    assert ("flaky", "skipped_cooldown", False) in web and ("wiki", "ready", True) in web
    assert rows["flaky"]["cooldownUntil"] is not None  # cooldowns are shared through the database
    human = invoke("--config", config, "routing")
    assert human.exit_code == 0 and "WEB" in human.stdout
    assert "LLM default → anthropic:claude-sonnet-4-5" in human.stdout
    assert "LLM default:chat (openai:gpt-4o) → openai:gpt-4o (Company OpenAI)" in human.stdout

"""CLI contract for search, providers, settings and projects (DESIGN §6): output, exit codes, errors."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.runtime import endpoint, only


def invoke(*args: str, config: Path | None = None):
    runner = CliRunner()
    argv = (["--config", str(config)] if config else []) + list(args)
    return runner.invoke(app, argv, catch_exceptions=False)


def config_file(tmp_path: Path, settings: dict) -> Path:
    path = tmp_path / "zarniwoop.yaml"
    path.write_text(yaml.safe_dump({"settings": settings}))
    return path


def wiki_settings(emulator, **extra) -> dict:
    return {**only(), **endpoint("wiki-a", "wikipedia", f"{emulator.url}/a"), **extra}


def test_search_json_prints_the_search_result(tmp_path, home, emulator):
    emulator.add(
        "/a/w/rest.php/v1/search/page",
        Reply.json(wikipedia_pages("Fermat's Last Theorem", "Pierre de Fermat")),
    )
    result = invoke(
        "search",
        "fermat",
        "-m",
        "encyclopedia",
        "--json",
        config=config_file(tmp_path, wiki_settings(emulator)),
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["providerInstanceId"] == "wiki-a"
    assert data["modality"] == "ENCYCLOPEDIA"
    assert data["returnedCount"] == 2
    assert [h["title"] for h in data["hits"]] == ["Fermat's Last Theorem", "Pierre de Fermat"]
    assert data["hits"][0]["url"].endswith("/a/wiki/Fermat%27s_Last_Theorem")
    assert data["hits"][0]["content"] == {"inline": "EMBED_TEXT", "text": "Fermat's Last Theorem is a thing"}
    assert data["cached"] is False
    assert emulator.requests("/a/w/rest.php/v1/search/page")[0].param("q") == "fermat"


def test_search_human_output_is_a_table_with_provenance(tmp_path, home, emulator):
    emulator.add("/a/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Linux")))
    result = invoke(
        "search", "linux", "-m", "encyclopedia", config=config_file(tmp_path, wiki_settings(emulator))
    )
    assert result.exit_code == 0
    assert "Linux" in result.stdout
    assert "(via wiki-a)" in result.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["search", "q", "-m", "hologram"],
            "modality: expected one of WEB, IMAGE, VIDEO, PDF, NEWS, ACADEMIC, ENCYCLOPEDIA",
        ),
        (["search", "   "], "query: must be a non-empty string"),
        (["search", "q", "-n", "0"], "maxResults: must be between 1 and 100, got 0"),
        (["search", "q", "-n", "-3"], "maxResults: must be between 1 and 100, got -3"),
        (["search", "q", "--date-from", "yesterday"], "dateFrom: must be an ISO date"),
    ],
)
def test_bad_search_input_is_one_line_exit_2_and_writes_nothing(home, args, expected):
    result = invoke(*args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert expected in lines[0]
    assert "Traceback" not in result.output
    assert not home.exists()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("settings: [unclosed", "malformed YAML: line 1"),
        (
            "settings:\n  research.endpoint.x.protocol: gopher\n",
            "research.endpoint.x.protocol: unknown protocol 'gopher'",
        ),
        (
            "settings:\n  research.default.web: nowhere\n",
            "research.default.web: names endpoint 'nowhere', which is not defined",
        ),
        (
            "settings:\n  research.default.hologram: wikipedia\n",
            "research.default.hologram: unknown modality 'hologram'",
        ),
        (
            "settings:\n  research.default.web: openalex\n",
            "endpoint 'openalex' (openalex) does not serve WEB",
        ),
        ("settings:\n  research.deadlineMs: soon\n", "research.deadlineMs: expected an integer"),
        (
            "tenants:\n  _bad: {}\n",
            "tenants: invalid tenant name: names starting with '_' are reserved for settings levels, got '_bad'",
        ),
        ("settings:\n  ai.provider.gw.type: grpc\n", "ai.provider.gw.type: unknown provider type 'grpc'"),
        (
            "settings:\n  research.endpoint.k.baseUrl: ${env:ZW_UNSET_FOR_TEST}\n",
            "environment variable ZW_UNSET_FOR_TEST is not set",
        ),
    ],
)
def test_bad_config_is_one_line_exit_2_and_writes_nothing(tmp_path, home, content, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    result = invoke("providers", config=path)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert expected in lines[0]
    assert not home.exists()


def test_every_provider_failing_exits_3_naming_each_reason(tmp_path, home, emulator):
    emulator.add("/a/works", Reply(status=503))
    emulator.add("/b/works", Reply(status=401))
    settings = {
        **only(),
        **endpoint("oa-a", "openalex", f"{emulator.url}/a"),
        **endpoint("oa-b", "openalex", f"{emulator.url}/b"),
    }
    result = invoke("search", "q", "-m", "academic", "--json", config=config_file(tmp_path, settings))
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert data["hits"] == []
    assert "oa-a: HTTP 503" in data["errorMessage"]
    assert "oa-b: HTTP 401" in data["errorMessage"]
    assert [a["outcome"] for a in data["attempts"] if a["providerInstanceId"] in ("oa-a", "oa-b")] == [
        "hard_error"
    ] * 2


def test_429_cooldown_shows_in_providers_for_that_modality_only(tmp_path, home, emulator):
    emulator.add("/a/w/rest.php/v1/search/page", Reply.json({}, status=429, headers={"Retry-After": "7"}))
    cfg = config_file(tmp_path, wiki_settings(emulator, **{"research.cache.ttlSeconds": 0}))
    before = time.time()
    assert invoke("search", "q", "-m", "encyclopedia", config=cfg).exit_code == 3
    listing = invoke("providers", "--json", config=cfg)
    assert listing.exit_code == 0
    [entry] = [p for p in json.loads(listing.stdout)["providers"] if p["id"] == "wiki-a"]
    assert entry["availability"] == "COOLDOWN"
    assert [c["modality"] for c in entry["cooldowns"]] == ["ENCYCLOPEDIA"]
    until = datetime.fromisoformat(entry["cooldownUntil"].replace("Z", "+00:00")).timestamp()
    assert before + 6 <= until <= time.time() + 8
    # A separate process (here: a separate CLI run) honours the cooldown, and WEB still goes out.
    emulator.add("/a/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Q")))
    again = invoke("search", "q2", "-m", "encyclopedia", "--json", config=cfg)
    mine = [a for a in json.loads(again.stdout)["attempts"] if a["providerInstanceId"] == "wiki-a"]
    # The only candidate is cooling down, so panic mode tries it once anyway — and says so.
    assert [(a["outcome"], a.get("panic", False)) for a in mine] == [
        ("skipped_cooldown", False),
        ("success", True),
    ]
    web = invoke("search", "q2", "-m", "web", "--json", config=cfg)
    assert web.exit_code == 0
    assert json.loads(web.stdout)["providerInstanceId"] == "wiki-a"


def test_settings_set_get_list_and_password_never_printed(tmp_path, home):
    assert invoke("settings", "set", "research.deadlineMs", "5000").exit_code == 0
    got = invoke("settings", "get", "research.deadlineMs", "--json")
    assert json.loads(got.stdout) == {
        "key": "research.deadlineMs",
        "value": "5000",
        "type": "INT",
        "level": "project",
        "source": "settings set",
    }
    secret = "sk-test-SUPERSECRET-123"
    out = invoke("settings", "set", "research.endpoint.serper.apiKey", secret, "--level", "tenant")
    assert out.exit_code == 0 and secret not in out.output
    listing = invoke("settings", "list", "--json")
    assert secret not in listing.stdout
    rows = {r["key"]: r for r in json.loads(listing.stdout)["settings"]}
    assert rows["research.endpoint.serper.apiKey"]["type"] == "PASSWORD"
    assert rows["research.endpoint.serper.apiKey"]["value"] == "********"
    assert secret.encode() not in (home / "zarniwoop.db").read_bytes()
    bad = invoke("settings", "set", "research.deadlineMs", "soon")
    assert bad.exit_code == 2
    assert bad.stderr.strip() == "error: research.deadlineMs: expected an integer, got 'soon'"
    dangling = invoke("settings", "set", "research.default.web", "ghost")
    assert dangling.exit_code == 2
    assert "names endpoint 'ghost', which is not defined" in dangling.stderr
    assert json.loads(invoke("settings", "get", "research.default.web", "--json").stdout)["value"] is None


def test_projects_stop_disposes_instances(tmp_path, home):
    result = invoke("--project", "review", "projects", "stop")
    assert result.exit_code == 0
    assert "stopped default/review" in result.stdout


def test_routing_lists_the_cascade(tmp_path, home, emulator):
    cfg = config_file(
        tmp_path,
        {
            **wiki_settings(emulator),
            **endpoint("oa-a", "openalex", f"{emulator.url}/a"),
            "research.default.academic": "oa-a",
        },
    )
    view = json.loads(invoke("routing", "--json", config=cfg).stdout)
    assert view["searchCascades"]["ACADEMIC"][0] == {
        "id": "oa-a",
        "gate": "ready",
        "selected": True,
        "place": "default",
    }
    assert [step["id"] for step in view["searchCascades"]["ENCYCLOPEDIA"]] == ["wiki-a"]
    row = next(r for r in view["search"] if r["id"] == "oa-a")
    assert row["keyable"] is True and row["selected"] is True and row["reachable"] is None


def test_urls_and_token_ids_are_never_cut_and_counts_read_right(tmp_path, home, emulator):
    emulator.add("/a/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Aurora")))
    cfg = config_file(tmp_path, wiki_settings(emulator))
    narrow = CliRunner().invoke(
        app, ["--config", str(cfg), "search", "aurora", "-m", "encyclopedia"], env={"COLUMNS": "60"}
    )
    assert narrow.exit_code == 0, narrow.stderr
    # the URL column folds the URL over lines; joined up again it is whole
    column = "".join(
        line.split("│")[2].strip() for line in narrow.stdout.splitlines() if line.startswith("│")
    )
    assert f"{emulator.url}/a/wiki/Aurora" in column
    assert "1 hit (via wiki-a)" in narrow.stdout
    created = json.loads(invoke("tokens", "create", "--role", "admin", "--json").stdout)
    assert created["id"].startswith("tok_")
    listing = CliRunner().invoke(app, ["tokens", "list"], env={"COLUMNS": "80"})
    assert created["id"] in listing.stdout
    assert invoke("tokens", "revoke", created["id"]).exit_code == 0

"""Scrubbing removes the query and nothing else (issue 28): the project's own wording is kept as
written, even when the query is one of its words (`resolve`) or inside one (`x` in `searxng`);
what came from outside (an upstream's error body) is scrubbed of it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import yaml
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app

from ..support.emulator import Reply
from ..support.runtime import endpoint, only


def invoke(config: Path, *args: str):
    return CliRunner().invoke(app, ["--config", str(config), *args], catch_exceptions=False)


def stored(home: Path) -> tuple[dict[str, str], list[str]]:
    """Cooldown reasons by subject, and the audit log's error messages."""
    with sqlite3.connect(home / "zarniwoop.db") as db:
        reasons = dict(db.execute("SELECT subject, reason FROM cooldowns"))
        errors = [e for (e,) in db.execute("SELECT error_message FROM research_call_records") if e]
    return reasons, errors


def test_offline_search_resolve_keeps_cannot_resolve(tmp_path, home):
    """No internet (the suite's resolver refuses every public name): the reason reads as written."""
    config = tmp_path / "zarniwoop.yaml"
    config.write_text(yaml.safe_dump({"settings": only("wikipedia")}))
    result = invoke(config, "search", "resolve", "-m", "encyclopedia", "--json")
    assert result.exit_code == 3
    attempt = json.loads(result.stdout)["attempts"][0]
    assert attempt["errorMessage"] == "network error: cannot resolve en.wikipedia.org"
    reasons, errors = stored(home)
    assert reasons == {"research:wikipedia:encyclopedia": "network error: cannot resolve en.wikipedia.org"}
    assert errors == ["network error: cannot resolve en.wikipedia.org"]


def test_search_x_keeps_the_projects_words_and_scrubs_the_upstreams(tmp_path, home, emulator):
    emulator.add("/a/search", Reply.json({"query": "x", "answers": ["x"]}))  # no `results`: malformed
    emulator.add("/b/search", Reply.json({"error": "engine x refused x"}, status=503))
    settings = {
        **only("stackexchange"),
        **endpoint("searx-a", "searxng", f"{emulator.url}/a"),
        **endpoint("searx-b", "searxng", f"{emulator.url}/b"),
    }
    config = tmp_path / "zarniwoop.yaml"
    config.write_text(yaml.safe_dump({"settings": settings}))
    result = invoke(config, "search", "x", "-m", "web", "--json")
    assert result.exit_code == 3, result.stderr
    shown = {a["providerInstanceId"]: a["errorMessage"] for a in json.loads(result.stdout)["attempts"]}
    assert shown == {
        "searx-a": "searxng: body has no results",
        "searx-b": "HTTP 503: engine x refused x",  # the user's own view keeps their query
        "stackexchange": "network error: cannot resolve api.stackexchange.com",
    }
    reasons, errors = stored(home)
    assert reasons == {
        "research:searx-a:web": "searxng: body has no results",
        "research:searx-b:web": "HTTP 503: engine <query> refused <query>",
        "research:stackexchange:web": "network error: cannot resolve api.stackexchange.com",
    }
    assert sorted(errors) == sorted(reasons.values())

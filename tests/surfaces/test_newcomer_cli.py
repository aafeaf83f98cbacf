"""A newcomer's smaller stumbles on the CLI (issue 28, item 9): each says what to do next.

The README's YAML with an unset key variable starts; local-index snippets show bold words, not
`**`; an endpoint id nobody defined is warned (`--strict` refuses); a fresh `settings list`
points at `--defaults`; a bare model name gets a suggestion; `llm ask` with no LLM says how to set
one; `serve --help` names the web UI; `search` shows a spinner on a terminal while it waits.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import yaml
from typer.testing import CliRunner

from zarniwoop.contract.enums import Modality
from zarniwoop.contract.results import SearchHit
from zarniwoop.surfaces.cli import app
from zarniwoop.surfaces.cli.search import snippet_markup

from ..support.emulator import Reply
from ..support.local_docs import write_corpus
from ..support.runtime import endpoint, only

SRC = Path(__file__).resolve().parents[2] / "src"
README = Path(__file__).resolve().parents[2] / "README.md"


def invoke(*args: str, config: Path | None = None):
    argv = (["--config", str(config)] if config else []) + list(args)
    return CliRunner().invoke(app, argv, catch_exceptions=False)


def readme_yaml() -> str:
    """The README's configuration example, as a user would copy it."""
    text = README.read_text()
    section = text[text.index("## Configuration") :]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


def test_the_readme_yaml_starts_without_serper_api_key_and_says_the_endpoint_has_no_key(
    tmp_path, home, caplog
):
    assert "SERPER_API_KEY" not in os.environ
    path = tmp_path / "zarniwoop.yaml"
    path.write_text(readme_yaml())
    result = invoke("--tenant", "acme", "providers", "--json", config=path)
    assert result.exit_code == 0, result.stderr
    entry = next(e for e in json.loads(result.stdout)["providers"] if e["id"] == "serper-main")
    assert entry["keyable"] is False
    [note] = [r.getMessage() for r in caplog.records if "SERPER_API_KEY" in r.getMessage()]
    assert note == (
        f"{path}: tenants.acme.settings.research.endpoint.serper-main.apiKey: environment variable "
        "SERPER_API_KEY is not set, so this has no key (export SERPER_API_KEY=… to use it, or remove the line)"
    )


def test_an_unset_variable_outside_an_api_key_is_still_a_config_error(tmp_path, home):
    path = tmp_path / "zarniwoop.yaml"
    path.write_text("settings:\n  research.endpoint.openalex.contactEmail: ${env:ZW_UNSET_MAIL}\n")
    result = invoke("providers", config=path)
    assert result.exit_code == 2
    assert "environment variable ZW_UNSET_MAIL is not set" in result.stderr


def test_local_index_snippets_show_matched_words_bold_not_as_asterisks(tmp_path, home):
    docs = write_corpus(tmp_path / "docs")
    assert invoke("index", str(docs)).exit_code == 0
    found = invoke("search", "budget", "-m", "internal_doc", "--json")
    snippets = [h["snippet"] for h in json.loads(found.stdout)["hits"]]
    assert any("**" in s for s in snippets), snippets  # the tool text keeps its Markdown bold
    shown = invoke("search", "budget", "-m", "internal_doc")
    assert shown.exit_code == 0, shown.stderr
    assert "budget" in shown.stdout and "**" not in shown.stdout


def test_snippet_markup_bolds_pairs_drops_a_cut_pair_and_escapes_provider_text():
    def hit(snippet: str, modality: Modality) -> SearchHit:
        return SearchHit("t", "file:///x", modality, snippet, "local")

    assert snippet_markup(hit("a **word** and [b]", Modality.INTERNAL_DOC)) == "a [bold]word[/bold] and \\[b]"
    assert snippet_markup(hit("x **cut", Modality.RAG)) == "x cut"
    assert snippet_markup(hit("2 **3** 4", Modality.WEB)) == "2 **3** 4"  # a provider's own asterisks


def test_an_endpoint_id_nobody_defined_is_warned_and_refused_with_strict(tmp_path, home):
    warned = invoke("settings", "set", "research.endpoint.nosuch.timeoutMs", "100")
    assert warned.exit_code == 0
    assert warned.stderr.startswith(
        "warning: research.endpoint.nosuch.timeoutMs names endpoint 'nosuch', which is not defined in "
        "this scope (a new one needs research.endpoint.nosuch.protocol); defined here: arxiv, brave,"
    )
    refused = invoke("settings", "set", "research.endpoint.wikipedai.timeoutMs", "100", "--strict")
    assert refused.exit_code == 2
    assert refused.stderr.strip() == (
        "error: research.endpoint.wikipedai.timeoutMs: names endpoint 'wikipedai', which is not defined "
        "in this scope (a new one needs research.endpoint.wikipedai.protocol); did you mean "
        "research.endpoint.wikipedia.timeoutMs? (--strict)"
    )
    got = json.loads(invoke("settings", "get", "research.endpoint.wikipedai.timeoutMs", "--json").stdout)
    assert (got["value"], got["source"]) == ("8000", "documented default")  # nothing written
    # an endpoint defined in the same breath, or a built-in, is no warning
    assert "warning" not in invoke("settings", "set", "research.endpoint.wikipedia.timeoutMs", "100").stderr
    assert "warning" not in invoke("settings", "set", "research.endpoint.mine.protocol", "wikipedia").stderr
    assert "warning" not in invoke("settings", "set", "research.endpoint.mine.timeoutMs", "100").stderr


def test_a_fresh_settings_list_points_at_defaults(home):
    fresh = invoke("settings", "list")
    assert fresh.exit_code == 0
    assert fresh.stdout.splitlines() == [
        "no setting written in this scope yet",
        "built-in and documented defaults: zarniwoop settings list --defaults",
    ]
    assert "--defaults" not in invoke("settings", "list", "--defaults").stdout


def test_a_bare_model_name_gets_a_suggestion(home):
    result = invoke("models", "resolve", "gpt-4o")
    assert result.exit_code == 2
    assert result.stderr.strip().endswith("did you mean openai:gpt-4o?")
    assert (
        invoke("models", "resolve", "claude-sonnet-4-5")
        .stderr.strip()
        .endswith("did you mean anthropic:claude-sonnet-4-5?")
    )


def test_llm_ask_with_no_llm_says_how_to_set_one(home):
    result = invoke("llm", "ask", "hello")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: cannot resolve model spec 'default:default'") and len(lines[0]) <= 200
    assert "zarniwoop settings set ai.default.provider openai --level tenant" in result.stderr
    assert "zarniwoop settings set ai.default.model gpt-4o-mini --level tenant" in result.stderr


def test_serve_help_names_the_web_ui():
    text = " ".join(invoke("serve", "--help").stdout.split())
    assert "Serve the web UI (open http://HOST:PORT/ in a browser)" in text


def test_search_on_a_terminal_shows_a_spinner_while_it_waits(tmp_path, emulator):
    """stderr is a pseudo-terminal: the status line is there while the provider still holds the
    request (the emulator has it and has not answered), before any result."""
    emulator.add("/a/w/rest.php/v1/search/page", Reply(hang=True))
    config = tmp_path / "zarniwoop.yaml"
    config.write_text(
        yaml.safe_dump(
            {"settings": {**only(), **endpoint("wiki-a", "wikipedia", f"{emulator.url}/a", timeoutMs=30000)}}
        )
    )
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(SRC), "ZARNIWOOP_HOME": str(tmp_path / "home"), "COLUMNS": "100"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "zarniwoop",
            "--config",
            str(config),
            "search",
            "fermat",
            "-m",
            "encyclopedia",
        ],
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 60  # a bound on a broken run, not a timing assertion
        while time.monotonic() < deadline and not (
            b"searching ENCYCLOPEDIA" in seen and emulator.requests("/a/w/rest.php/v1/search/page")
        ):
            if select.select([leader], [], [], 0.2)[0]:
                seen += os.read(leader, 4096)
        assert b"searching ENCYCLOPEDIA" in seen
        assert emulator.requests("/a/w/rest.php/v1/search/page")  # the provider holds the request
        assert proc.poll() is None  # and the search has not answered yet
    finally:
        proc.kill()
        proc.wait()
        os.close(leader)

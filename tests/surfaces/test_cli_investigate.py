"""`zarniwoop investigate` is honest about failed searches (issue 13): every search failing is exit 3
with each failure named; a partial failure still answers (exit 0) and lists what failed."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app

from ..support.bodies import openalex_works
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, write_config

QUESTION = "CRISPR base editor off-target effects study"


def _settings(emulator) -> dict:
    return {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/wiki"),
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.academic": 0,
        "research.cache.ttlSeconds.encyclopedia": 0,
    }


def test_every_search_failing_is_exit_3_naming_each(tmp_path, home, emulator):
    emulator.add("/oa/works", Reply(status=503))
    emulator.add("/wiki/w/rest.php/v1/search/page", Reply(status=503))
    config = write_config(tmp_path, {"settings": _settings(emulator)})
    human = CliRunner().invoke(app, ["--config", str(config), "investigate", QUESTION])
    assert human.exit_code == 3
    first, *rest = human.stderr.splitlines()
    assert first == "error: every search failed: 2 providers are overloaded (HTTP 503)"
    assert len(rest) == 1 and rest[0].endswith("with --verbose or --json)")
    verbose = CliRunner().invoke(app, ["--config", str(config), "investigate", QUESTION, "--verbose"])
    assert verbose.exit_code == 3
    assert "HTTP 503" in verbose.stderr and "  ACADEMIC " in verbose.stderr
    machine = CliRunner().invoke(app, ["--config", str(config), "investigate", QUESTION, "--json"])
    assert machine.exit_code == 3
    searches = json.loads(machine.stdout)["searches"]
    assert searches and all(s["errorMessage"] for s in searches)


def test_a_partial_failure_answers_and_lists_it(tmp_path, home, emulator):
    emulator.add("/oa/works", Reply.json(openalex_works(3)))
    emulator.add("/wiki/w/rest.php/v1/search/page", Reply(status=503))
    config = write_config(tmp_path, {"settings": _settings(emulator)})
    machine = CliRunner().invoke(app, ["--config", str(config), "investigate", QUESTION, "--json"])
    assert machine.exit_code == 0, machine.stderr
    searches = json.loads(machine.stdout)["searches"]
    failed = [s for s in searches if s["errorMessage"]]
    assert failed and len(failed) < len(searches)
    human = CliRunner().invoke(app, ["--config", str(config), "investigate", QUESTION])
    assert human.exit_code == 0
    assert f"{len(failed)} of {len(searches)} searches failed:" in human.stdout

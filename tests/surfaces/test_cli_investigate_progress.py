"""`zarniwoop investigate`: on a terminal each pipeline step goes to stderr while it runs, only the
answer to stdout; off a terminal nothing is drawn."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app

from ..support.runtime import write_config
from ..support.tool_calls import CALLS, mount_recorded

QUESTION = CALLS["research_investigate"]["question"]
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def strip_controls(text: str) -> str:
    """The lines a person sees once the live display is gone: without cursor moves and redraws."""
    return CONTROL.sub("", text)


def test_json_stdout_stays_pure_and_the_steps_go_to_stderr(tmp_path, emulator, monkeypatch):
    monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich treats stderr as a terminal…
    monkeypatch.setenv("NO_COLOR", "1")  # …without colours, so the lines read plainly
    config = write_config(tmp_path, {"settings": mount_recorded(emulator)})
    result = CliRunner().invoke(app, ["--config", str(config), "investigate", QUESTION, "--json"])
    assert result.exit_code == 0, result.output
    ranked = json.loads(result.stdout)  # nothing but the RankedHitSet
    assert ranked["question"] == QUESTION
    shown = strip_controls(result.stderr)
    searches = len(ranked["searches"])
    expected = [
        f"plan planned {searches} searches (heuristic)",
        *[f"search search {n}/{searches}: " for n in range(1, searches + 1)],
        "dedup merged ",
        f"evaluate kept {len(ranked['hits'])}, dropped {len(ranked['dropped'])} (lexical)",
    ]
    at = 0
    for text in expected:  # each step's line, in order, among the redraws of the live bar
        at = shown.index(text, at) + len(text)


def test_human_output_on_a_terminal_draws_a_progress_bar(tmp_path, emulator, monkeypatch):
    monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich draws its live display as on a terminal
    monkeypatch.setenv("COLUMNS", "120")
    config = write_config(tmp_path, {"settings": mount_recorded(emulator)})
    result = CliRunner().invoke(app, ["--config", str(config), "investigate", QUESTION])
    assert result.exit_code == 0, result.output
    assert "\x1b[?25l" in result.stderr  # the live display hid the cursor while the bar was up
    assert "8/8" in result.stderr  # plan, 4 searches, dedup, evaluate, insights: the bar ran to its end
    assert QUESTION in result.stdout


def test_off_a_terminal_nothing_is_drawn(tmp_path, emulator, monkeypatch):
    monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path / "home"))
    config = write_config(tmp_path, {"settings": mount_recorded(emulator)})
    result = CliRunner().invoke(app, ["--config", str(config), "investigate", QUESTION, "--json"])
    assert result.exit_code == 0
    assert result.stderr == ""
    assert json.loads(result.stdout)["question"] == QUESTION

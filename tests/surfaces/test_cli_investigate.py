"""`zarniwoop investigate`: each pipeline step on stderr while it runs, only the answer on stdout."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app

from ..support.runtime import write_config
from ..support.tool_calls import CALLS, mount_recorded

QUESTION = CALLS["research_investigate"]["question"]


def test_json_stdout_stays_pure_and_the_steps_go_to_stderr(tmp_path, emulator, monkeypatch):
    monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path / "home"))
    config = write_config(tmp_path, {"settings": mount_recorded(emulator)})
    result = CliRunner().invoke(app, ["--config", str(config), "investigate", QUESTION, "--json"])
    assert result.exit_code == 0, result.output
    ranked = json.loads(result.stdout)  # nothing but the RankedHitSet
    assert ranked["question"] == QUESTION
    lines = [line for line in result.stderr.splitlines() if line]
    searches = len(ranked["searches"])
    assert lines[0] == f"plan planned {searches} searches (heuristic)"
    assert [line.split()[0] for line in lines] == ["plan", *["search"] * searches, "dedup", "evaluate"]
    assert lines[1].startswith(f"search search 1/{searches}: ")
    assert lines[-1].startswith(f"evaluate kept {len(ranked['hits'])}, dropped {len(ranked['dropped'])}")


def test_human_output_on_a_terminal_draws_a_progress_bar(tmp_path, emulator, monkeypatch):
    monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich draws its live display as on a terminal
    monkeypatch.setenv("COLUMNS", "120")
    config = write_config(tmp_path, {"settings": mount_recorded(emulator)})
    result = CliRunner().invoke(app, ["--config", str(config), "investigate", QUESTION])
    assert result.exit_code == 0, result.output
    assert "\x1b[?25l" in result.stderr  # the live display hid the cursor while the bar was up
    assert "7/7" in result.stderr  # plan, 4 searches, dedup, evaluate: the bar ran to its end
    assert QUESTION in result.stdout

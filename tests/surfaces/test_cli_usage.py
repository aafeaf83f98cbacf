"""`zarniwoop usage`: the audit log per instance and modality, after real searches."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app

from ..support.bodies import openalex_works
from ..support.cli import run_cli
from ..support.emulator import Reply
from ..support.runtime import cascade, endpoint, write_config


def test_usage_after_searches(tmp_path, emulator, monkeypatch):
    emulator.add("/a/works", Reply(status=500))
    emulator.add("/b/works", Reply.json(openalex_works(4)))
    settings = cascade(
        "academic",
        endpoint("oa-a", "openalex", f"{emulator.url}/a"),
        endpoint("oa-b", "openalex", f"{emulator.url}/b", quota__daily=10),
    )
    config = str(write_config(tmp_path, {"settings": settings}))
    monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    for query in ("first", "second"):
        assert runner.invoke(app, ["--config", config, "search", query, "-m", "academic"]).exit_code == 0

    result = runner.invoke(app, ["--config", config, "usage", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["scope"] == {"tenant": "default", "project": "default"}
    rows = {r["instance"]: r for r in report["research"]["rows"]}
    # oa-a failed once, then was cooling down (a skip is not a call)
    assert (rows["oa-a"]["calls"], rows["oa-a"]["failures"], rows["oa-a"]["hits"]) == (1, 1, 0)
    assert (rows["oa-b"]["calls"], rows["oa-b"]["failures"], rows["oa-b"]["hits"]) == (2, 0, 8)
    assert rows["oa-b"]["modality"] == "ACADEMIC"
    assert 0 <= rows["oa-b"]["p50Ms"] <= rows["oa-b"]["p95Ms"]
    assert (rows["oa-b"]["quota"]["used"], rows["oa-b"]["quota"]["limit"]) == (2, 10)
    assert rows["oa-a"]["quota"] is None
    assert report["research"]["totals"] == {"calls": 3, "hits": 8, "failures": 1}

    monkeypatch.setenv("COLUMNS", "160")
    table = runner.invoke(app, ["--config", config, "usage"])
    assert table.exit_code == 0
    assert "oa-b" in table.stdout and "2/10 per day (local)" in table.stdout

    bad = runner.invoke(app, ["--config", config, "usage", "--since", "soonish"])
    assert bad.exit_code == 2
    assert bad.stderr.strip().splitlines() == [
        "error: since: expected a duration like 24h, 7d, 30m or an ISO date, got 'soonish'"
    ]


def test_metrics_names_the_token_in_its_hint_and_when_refused(tmp_path, emulator):
    """A user who follows the hint to `--url` and meets 401 learns from both how to pass a token."""
    emulator.add("/metrics", Reply(status=401))
    home = tmp_path / "home"
    local = run_cli("metrics", home=home)
    assert local.code == 0
    assert "zarniwoop metrics --url http://127.0.0.1:8765 --token <operator token> (or ZARNIWOOP_TOKEN)" in (
        local.stderr
    )
    bare = run_cli("metrics", "--url", emulator.url, home=home, env={"ZARNIWOOP_TOKEN": ""})
    assert bare.code == 5
    assert bare.stderr.strip() == (
        f"error: {emulator.url}/metrics answered HTTP 401: it needs an operator token: "
        "pass --token or set ZARNIWOOP_TOKEN"
    )
    wrong = run_cli("metrics", "--url", emulator.url, "--token", "zw_wrong", home=home)
    assert wrong.code == 5 and "--token or ZARNIWOOP_TOKEN" in wrong.stderr

"""The config file is the source of truth for what it names, and for what it stops naming (issue
28): a key it set at its last start and no longer names is removed at the next start (logged
once, in `settings list`'s history); an endpoint it no longer defines stops being active."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app

from ..support.runtime import endpoint, only

BASE = {**only(), **endpoint("oa", "openalex", "http://127.0.0.1:9/oa")}


def write(path: Path, settings: dict) -> Path:
    path.write_text(yaml.safe_dump({"settings": settings}))
    return path


def cli(config: Path, *args: str):
    return CliRunner().invoke(app, ["--config", str(config), *args], catch_exceptions=False)


def warnings(caplog) -> list[str]:
    messages = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    caplog.clear()
    return messages


def test_a_key_the_file_stops_naming_falls_back_to_the_default(tmp_path, home, database_url, caplog):
    body = {"database_url": database_url} if database_url else {}
    config = tmp_path / "zarniwoop.yaml"

    def start(settings: dict) -> None:
        config.write_text(yaml.safe_dump({**body, "settings": settings}))

    start({**BASE, "research.endpoint.oa.timeoutMs": 1500, "research.endpoint.oa.timeoutms": 9})
    got = json.loads(cli(config, "settings", "get", "research.endpoint.oa.timeoutMs", "--json").stdout)
    assert (got["value"], got["source"]) == ("1500", f"config file {config}")
    assert any("research.endpoint.oa.timeoutms" in w for w in warnings(caplog))  # the typo, warned

    start(BASE)  # both keys gone from the file
    got = json.loads(cli(config, "settings", "get", "research.endpoint.oa.timeoutMs", "--json").stdout)
    assert (got["value"], got["level"], got["source"]) == ("8000", "default", "documented default")
    removed = warnings(caplog)
    assert sorted(w for w in removed if "no longer names" in w) == [
        f"{config} no longer names research.endpoint.oa.timeoutMs (_system/_tenant), which it set at its last start: removed",
        f"{config} no longer names research.endpoint.oa.timeoutms (_system/_tenant), which it set at its last start: removed",
    ]
    listed = json.loads(cli(config, "settings", "list", "--json").stdout)
    assert not [r for r in listed["settings"] if r["key"].startswith("research.endpoint.oa.timeout")]
    history = [(h["keys"], h["by"], h["note"]) for h in listed["history"]]
    assert sorted(history) == [
        (
            ["research.endpoint.oa.timeoutMs"],
            "config file",
            f"removed: {config.resolve()} no longer names it",
        ),
        (
            ["research.endpoint.oa.timeoutms"],
            "config file",
            f"removed: {config.resolve()} no longer names it",
        ),
    ]
    shown = cli(config, "settings", "list")
    assert "research.endpoint.oa.timeoutMs: removed:" in " ".join(shown.stdout.split())
    assert warnings(caplog) == []  # no warning repeats, no second removal


def test_an_endpoint_removed_from_the_file_is_absent_from_providers(tmp_path, home, caplog):
    config = write(
        tmp_path / "zarniwoop.yaml", {**BASE, **endpoint("extra", "arxiv", "http://127.0.0.1:9/ax")}
    )
    ids = [p["id"] for p in json.loads(cli(config, "providers", "--json").stdout)["providers"]]
    assert "extra" in ids and "oa" in ids
    write(config, BASE)
    ids = [p["id"] for p in json.loads(cli(config, "providers", "--json").stdout)["providers"]]
    assert "extra" not in ids and "oa" in ids
    # a key written with `settings set` (not the file's) is the database's: it stays
    assert cli(config, "settings", "set", "research.endpoint.oa.timeoutMs", "700").exit_code == 0
    got = json.loads(cli(config, "settings", "get", "research.endpoint.oa.timeoutMs", "--json").stdout)
    assert got["value"] == "700"


def test_another_config_file_leaves_the_first_ones_keys_alone(tmp_path, home):
    first = write(tmp_path / "a.yaml", {"research.deadlineMs": 9000})
    cli(first, "providers", "--json")
    second = write(tmp_path / "b.yaml", {"research.cache.ttlSeconds": 60})
    got = json.loads(cli(second, "settings", "get", "research.deadlineMs", "--json").stdout)
    assert got["value"] == "9000"

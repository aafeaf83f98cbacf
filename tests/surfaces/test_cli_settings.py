"""`zarniwoop settings` says what it does (issue 13), through the real CLI, on SQLite and PostgreSQL:
a key the config file owns is refused naming the file; a typo is warned with the nearest known key
(refused with --strict); defaults nobody wrote down are shown with where each value comes from."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app


def _config(tmp_path: Path, database_url: str | None, settings: dict) -> Path:
    body: dict = {"settings": settings}
    if database_url:
        body["database_url"] = database_url
    path = tmp_path / "zarniwoop.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def _cli(config: Path, *args: str):
    return CliRunner().invoke(app, ["--config", str(config), *args], catch_exceptions=False)


def test_a_key_the_config_file_owns_is_refused_naming_the_file(tmp_path, home, database_url):
    config = _config(tmp_path, database_url, {"research.deadlineMs": 9000})
    refused = _cli(config, "settings", "set", "research.deadlineMs", "5000", "--level", "system")
    assert refused.exit_code == 2
    assert refused.stderr.strip() == (
        f"error: research.deadlineMs: is set in {config}, which is in force for this run; "
        "change it there instead"
    )
    assert _cli(config, "settings", "delete", "research.deadlineMs", "--level", "system").exit_code == 2
    got = json.loads(_cli(config, "settings", "get", "research.deadlineMs", "--json").stdout)
    assert got == {
        "key": "research.deadlineMs",
        "value": "9000",
        "type": "INT",
        "level": "system",
        "source": f"config file {config}",
    }
    # the same key at another level is the database's to hold
    moved = _cli(config, "settings", "set", "research.deadlineMs", "5000", "--level", "project")
    assert moved.exit_code == 0, moved.stderr
    assert (
        json.loads(_cli(config, "settings", "get", "research.deadlineMs", "--json").stdout)["value"] == "5000"
    )


def test_an_unknown_key_is_warned_with_the_nearest_known_one(tmp_path, home, database_url):
    config = _config(tmp_path, database_url, {})
    typo = _cli(config, "settings", "set", "research.deadlinems", "5")
    assert typo.exit_code == 0
    assert (
        "warning: research.deadlinems is not a known setting; did you mean research.deadlineMs?"
        in typo.stderr
    )
    strict = _cli(config, "settings", "set", "research.endpoint.wikipedia.timeoutms", "5", "--strict")
    assert strict.exit_code == 2
    assert strict.stderr.strip() == (
        "error: research.endpoint.wikipedia.timeoutms: is not a known setting; "
        "did you mean research.endpoint.wikipedia.timeoutMs? (--strict)"
    )
    assert (
        json.loads(_cli(config, "settings", "get", "research.endpoint.wikipedia.timeoutms", "--json").stdout)[
            "value"
        ]
        is None
    )  # nothing written
    known = _cli(config, "settings", "set", "research.endpoint.wikipedia.contactEmail", "me@example.org")
    assert known.exit_code == 0 and "warning" not in known.stderr


def test_defaults_are_shown_with_their_source(tmp_path, home, database_url):
    config = _config(tmp_path, database_url, {})
    got = json.loads(
        _cli(config, "settings", "get", "research.endpoint.wikipedia.timeoutMs", "--json").stdout
    )
    assert got == {
        "key": "research.endpoint.wikipedia.timeoutMs",
        "value": "8000",
        "type": None,
        "level": "default",
        "source": "documented default",
    }
    listing = _cli(config, "settings", "list", "research.", "--defaults", "--json")
    rows = {r["key"]: r for r in json.loads(listing.stdout)["settings"]}
    assert rows["research.deadlineMs"] == {
        "key": "research.deadlineMs",
        "value": "20000",
        "type": "INT",
        "level": "builtin",
        "source": "built-in default",
    }
    assert rows["research.endpoint.openalex.timeoutMs"]["value"] == "8000"
    plain = json.loads(_cli(config, "settings", "list", "--json").stdout)["settings"]
    assert [r for r in plain if r["level"] in ("builtin", "default")] == []


def test_a_typo_in_the_config_file_is_warned_at_start(tmp_path, home, caplog):
    config = _config(tmp_path, None, {"research.provenence": True})
    with caplog.at_level("WARNING", logger="zarniwoop.runtime"):
        assert _cli(config, "settings", "get", "research.provenance").exit_code == 0
    assert f"{config}: research.provenence is not a known setting; did you mean research.provenance?" in [
        r.getMessage() for r in caplog.records
    ]


def test_a_misspelt_endpoint_key_in_the_config_file_is_warned_once(tmp_path, home, caplog):
    config = _config(tmp_path, None, {"research.endpoint.wikipedia.timeoutMS": 3000})
    with caplog.at_level("WARNING", logger="zarniwoop.runtime"):
        assert _cli(config, "settings", "get", "research.deadlineMs").exit_code == 0
    about = [r.getMessage() for r in caplog.records if "timeoutMS" in r.getMessage()]
    assert about == [
        f"{config}: research.endpoint.wikipedia.timeoutMS is not a known setting; "
        "did you mean research.endpoint.wikipedia.timeoutMs?"
    ]

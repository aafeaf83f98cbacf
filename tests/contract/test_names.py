"""The one name rule (`contract/names.py`) at every entry point, and nothing outside ZARNIWOOP_HOME
touched: the real CLI runner, a real `zarniwoop serve`, the real MCP endpoint (issue 11, item 1)."""

from __future__ import annotations

import http.client
import json
import os
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
import yaml
from typer.testing import CliRunner

from zarniwoop.contract.errors import InvalidRequestError
from zarniwoop.contract.names import check_name, path_inside
from zarniwoop.surfaces.cli import app

from ..support.served import served

BAD = {
    "dotdot": "..",
    "dot": ".",
    "absolute": "/abs",
    "slash": "a/b",
    "upper": "A",
    "long": "a" * 65,
    "empty": "",
    "nul": "a\x00b",
}


def _tree(root: Path, skip: Path) -> dict[str, float]:
    """Every path under `root` but outside `skip`, with its mtime: what a run may not change."""
    out: dict[str, float] = {}
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if Path(directory, d) != skip]
        for name in dirnames + filenames:
            path = Path(directory, name)
            out[str(path.relative_to(root))] = path.lstat().st_mtime
    return out


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A home inside tmp_path, and beside it folders named like the ones a climbing name would hit."""
    home = tmp_path / "home"
    for name in ("workspace/default/default", "index/x", "documents/x", "spool", "abs", "a/b", "A"):
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "keep.txt").write_text("must survive")
    monkeypatch.setenv("ZARNIWOOP_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return tmp_path, home


# -- the rule itself ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", list(BAD.values()), ids=list(BAD))
def test_the_rule_refuses_each_bad_name_naming_the_field(value):
    with pytest.raises(InvalidRequestError) as caught:
        check_name("tenant", value)
    assert caught.value.field == "tenant"


@pytest.mark.parametrize("value", ["acme", "a", "transformer-review", "v1.2_x", "0" * 64])
def test_the_rule_accepts_ordinary_ids(value):
    assert check_name("project", value) == value


def test_settings_levels_only_where_allowed():
    assert check_name("tenant", "_system", allow_level=True) == "_system"
    with pytest.raises(InvalidRequestError, match="reserved"):
        check_name("tenant", "_system")


def test_path_inside_refuses_climbing_and_symlinks_out(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    assert path_inside(root, "a", "b") == (root / "a" / "b").resolve()
    (root / "link").symlink_to(tmp_path)
    for parts in (("..",), ("a", "..", ".."), ("/etc",), ("link", "x"), ("a\x00",), ()):
        with pytest.raises(InvalidRequestError) as caught:
            path_inside(root, *parts)
        assert caught.value.field == "path"


# -- the CLI: options, environment, config file ---------------------------------------------------

CLI_ENTRIES = {
    "--tenant": lambda v: (["--tenant", v, "providers"], {}),
    "--project": lambda v: (["--project", v, "providers"], {}),
    "ZARNIWOOP_TENANT": lambda v: (["providers"], {"ZARNIWOOP_TENANT": v}),
    "ZARNIWOOP_PROJECT": lambda v: (["providers"], {"ZARNIWOOP_PROJECT": v}),
    "PROJECT": lambda v: (["projects", "stop", v], {}),  # the rmtree of issue 11
    "tokens --tenant": lambda v: (["tokens", "create", "--tenant", v, "--project", "p"], {}),
    "tokens --project": lambda v: (["tokens", "create", "--tenant", "t", "--project", v], {}),
    "credentials --account": lambda v: (["credentials", "set", "K", "--account", v, "--value", "x"], {}),
    "usage --account": lambda v: (["usage", "--llm", "--account", v], {}),
}
FIELD = {"PROJECT": "project", "tokens --tenant": "tenant", "tokens --project": "project"}


def _cells(entries):
    for entry in entries:
        for label, value in BAD.items():
            env_entry = entry.startswith("ZARNIWOOP_")
            if env_entry and label in ("nul", "empty"):
                continue  # an environment cannot hold NUL, and an empty variable means "unset"
            yield pytest.param(entry, value, id=f"{entry}-{label}")


@pytest.mark.parametrize(("entry", "value"), list(_cells(CLI_ENTRIES)))
def test_cli_refuses_a_bad_name_with_exit_2_naming_the_option(world, entry, value):
    tmp_path, home = world
    before = _tree(tmp_path, home)
    argv, env = CLI_ENTRIES[entry](value)
    result = CliRunner().invoke(app, argv, env=env, catch_exceptions=False)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert FIELD.get(entry, entry.split()[-1]) in lines[0]
    assert _tree(tmp_path, home) == before


@pytest.mark.parametrize("where", ["tenant", "project", "team", "account", "account team"])
@pytest.mark.parametrize("label", list(BAD))
def test_config_file_refuses_a_bad_name_naming_it(world, where, label):
    tmp_path, home = world
    value = BAD[label]
    tenant: dict = {"projects": {"p": {}}, "teams": {"t": {}}, "accounts": {"m": {}}}
    config: dict = {"tenants": {"acme": tenant}}
    if where == "tenant":
        config["tenants"] = {value: {}}
    elif where == "account team":
        tenant["accounts"]["m"] = {"teams": [value]}
    else:
        tenant[where + "s"] = {value: {}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True))
    before = _tree(tmp_path, home)
    result = CliRunner().invoke(app, ["--config", str(path), "providers"], catch_exceptions=False)
    assert result.exit_code == 2, result.stdout
    assert f"invalid {where.split()[-1]} name" in result.stderr
    assert _tree(tmp_path, home) == before
    assert not home.exists()  # a refused config writes nothing


def test_operator_cli_still_addresses_the_settings_levels(world):
    result = CliRunner().invoke(app, ["--tenant", "acme", "--project", "_tenant", "providers", "--json"])
    assert result.exit_code == 0, result.stderr


# -- a real server: query parameters, path parameters, /mcp ---------------------------------------

HTTP_ENTRIES = {
    "tenant": lambda v: f"/v1/research/providers?tenant={quote(v, safe='')}",
    "project": lambda v: f"/v1/research/providers?project={quote(v, safe='')}",
    "stop tenant": lambda v: ("POST", f"/v1/admin/projects/default/stop?tenant={quote(v, safe='')}"),
    "stop project": lambda v: ("POST", f"/v1/admin/projects/{quote(v, safe='.')}/stop"),
    "account": lambda v: f"/v1/usage?account={quote(v, safe='')}",
    "mcp tenant": lambda v: ("POST", f"/mcp?tenant={quote(v, safe='')}"),
    "mcp project": lambda v: ("POST", f"/mcp?project={quote(v, safe='')}"),
}


def _raw(url: str, method: str, target: str, token: str) -> tuple[int, dict]:
    """Send the request target exactly as given (an HTTP client would normalise `..` away)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        body = b"{}" if method == "POST" else None
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        headers["Accept"] = "application/json, text/event-stream"
        conn.request(method, target, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def test_served_app_refuses_every_bad_name_with_422_naming_the_field(world):
    tmp_path, home = world
    config = tmp_path / "zarniwoop.yaml"
    config.write_text(yaml.safe_dump({"settings": {}}))
    before = _tree(tmp_path, home)
    answers: dict[str, tuple[int, dict]] = {}
    with served(config, home) as server:
        assert server.token is not None  # the operator token (`*`/`*`, admin): may name any scope
        for entry, target_of in HTTP_ENTRIES.items():
            for label, value in BAD.items():
                target = target_of(value)
                method, target = target if isinstance(target, tuple) else ("GET", target)
                answers[f"{entry}-{label}"] = _raw(server.url, method, target, server.token)
    wrong = {}
    for cell, (status, body) in answers.items():
        entry, label = cell.rsplit("-", 1)
        field = entry.split()[-1]
        routed = not (entry == "stop project" and label in ("absolute", "slash", "empty"))
        # A path parameter holding '/' (or nothing) matches no route: refused as a 404.
        expected = (422, field) if routed else (404, None)
        got = (status, body.get("error", {}).get("field"))
        if got != expected:
            wrong[cell] = (got, body)
    assert wrong == {}
    assert _tree(tmp_path, home) == before
    assert (tmp_path / "index" / "x" / "keep.txt").read_text() == "must survive"

"""A config file is in force exactly while it is given (issue 46): its keys are a layer of that run
(between the built-in defaults and what `settings set` wrote, at each level), never written to the
database, so a run with another file or none does not see them; a home whose settings an earlier
version seeded from a file is migrated (those keys move out, each in the settings history)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from zarniwoop.contract.query import SearchScope
from zarniwoop.runtime import Runtime

from ..support.cli import run_cli
from ..support.emulator import Emulator, Reply
from ..support.runtime import endpoint, only

pytestmark = pytest.mark.anyio

BASE = {**only(), **endpoint("oa", "openalex", "http://127.0.0.1:9/oa")}
WIKI = "research.endpoint.wikipedia.baseUrl"
PAGES = {"pages": [{"id": 1, "key": "Resolve_(band)", "title": "Resolve (band)", "excerpt": "a band"}]}


def write(path: Path, settings: dict, **top: object) -> Path:
    path.write_text(yaml.safe_dump({**top, "settings": settings}))
    return path


def file_rows(listed: dict) -> list[tuple[str, str]]:
    return sorted(
        (r["key"], r["source"]) for r in listed["settings"] if r["source"].startswith("config file")
    )


def test_a_file_s_endpoint_is_used_only_by_the_runs_that_name_it(tmp_path, home):
    emu = Emulator().start()
    try:
        emu.add("/a/w/rest.php/v1/search/page", Reply(hang=True))
        emu.add("/b/w/rest.php/v1/search/page", Reply.json(PAGES))
        # a.yaml: the case, an endpoint at a loopback URL that never answers (its one
        # attempt given a short timeout: the run is expected to time out)
        a = write(
            tmp_path / "a.yaml",
            {**only("wikipedia"), WIKI: f"{emu.url}/a", "research.endpoint.wikipedia.timeoutMs": 200},
        )
        b = write(tmp_path / "b.yaml", {**only("wikipedia"), WIKI: f"{emu.url}/b"})

        hung = run_cli("--config", str(a), "search", "resolve", "-m", "encyclopedia", home=home)
        assert hung.code == 3 and f"127.0.0.1:{emu.url.rsplit(':', 1)[1]}" in hung.stderr

        plain = run_cli("search", "resolve", "-m", "encyclopedia", home=home)
        # offline (tests/conftest.py refuses every non-loopback lookup): the built-in endpoint was asked
        assert plain.code == 3
        assert "wikipedia: network error: cannot resolve en.wikipedia.org" in plain.stderr
        assert "127.0.0.1" not in plain.stderr

        served = run_cli("--config", str(b), "search", "resolve", "-m", "encyclopedia", "--json", home=home)
        assert served.code == 0, served.stderr
        hits = json.loads(served.stdout)["hits"]
        assert [(h["title"], h["url"]) for h in hits] == [
            ("Resolve (band)", f"{emu.url}/b/wiki/Resolve_(band)")
        ]
        assert len(emu.requests("/b/w/rest.php/v1/search/page")) == 1
    finally:
        emu.stop()

    with_b = json.loads(run_cli("--config", str(b), "settings", "list", "--json", home=home).stdout)
    assert (WIKI, f"config file {b}") in file_rows(with_b)
    without = json.loads(run_cli("settings", "list", "--json", home=home).stdout)
    assert file_rows(without) == []
    with sqlite3.connect(home / "zarniwoop.db") as db:  # nothing of either file was stored
        assert db.execute("SELECT key FROM settings WHERE key LIKE 'research.%'").fetchall() == []


async def test_replicas_given_the_same_file_agree_and_one_without_it_does_not_see_it(tmp_path, database_url):
    top = {"database_url": database_url} if database_url else {}
    config = write(tmp_path / "z.yaml", {"research.deadlineMs": 4321}, **top)
    bare = write(tmp_path / "bare.yaml", {}, **top)
    async with (
        await Runtime.open(config, home=tmp_path / "one") as one,
        await Runtime.open(config, home=tmp_path / "two") as two,
        await Runtime.open(bare, home=tmp_path / "three") as three,
    ):
        seen = [
            rt.settings.scoped(SearchScope()).get_int("research.deadlineMs", 0) for rt in (one, two, three)
        ]
        assert seen[:2] == [4321, 4321] and seen[2] != 4321
        rows = await three.db.fetchall("SELECT key FROM settings WHERE key = 'research.deadlineMs'")
        assert rows == []


async def test_a_stored_value_overrides_the_file_at_its_level_and_the_start_says_so(tmp_path, home, caplog):
    config = write(tmp_path / "z.yaml", {"research.deadlineMs": 1000})
    async with await Runtime.open(None, home=home) as rt:
        await rt.settings.set("_system", "_tenant", "research.deadlineMs", 9999)
        await rt.settings.set("_system", "_tenant", "research.provenance", True)
    async with await Runtime.open(config, home=home) as rt:
        scoped = rt.settings.scoped(SearchScope())
        assert scoped.get_int("research.deadlineMs", 0) == 9999
        assert scoped.get_bool("research.provenance", False) is True
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        f"{config} names research.deadlineMs (_system/_tenant), but a value stored by `settings set` "
        "overrides it; `zarniwoop settings delete research.deadlineMs` at that level to use the file's"
    ]


async def test_a_home_seeded_by_the_earlier_code_is_migrated(tmp_path, database_url):
    top = {"database_url": database_url} if database_url else {}
    home = tmp_path / "home"
    config = write(tmp_path / "z.yaml", {**BASE, "research.endpoint.oa.timeoutMs": 1500}, **top)
    async with await Runtime.open(write(tmp_path / "none.yaml", {}, **top), home=home) as rt:
        # What the earlier code left behind: the file's keys stored and recorded as seeded by it,
        # beside a key written by `settings set`, at schema version 34.
        await rt.db.execute(
            "CREATE TABLE config_seeded (source TEXT NOT NULL, tenant TEXT NOT NULL, "
            "project TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (source, tenant, project, key))"
        )
        for key, value in {**BASE, "research.endpoint.oa.timeoutMs": 1500}.items():
            await rt.settings.set("_system", "_tenant", key, value, refresh=False)
            await rt.db.execute(
                "INSERT INTO config_seeded (source, tenant, project, key) VALUES (?, ?, ?, ?)",
                (str(config.resolve()), "_system", "_tenant", key),
            )
        await rt.settings.set("_system", "_tenant", "research.provenance", True)
        await rt.db.execute("DELETE FROM schema_version WHERE version = 35")

    async with await Runtime.open(write(tmp_path / "none.yaml", {}, **top), home=home) as rt:
        stored = {key for (key,) in await rt.db.fetchall("SELECT key FROM settings")}
        assert stored == {"research.provenance"}  # the seeded keys moved out; the one set stays
        notes = await rt.db.fetchall("SELECT keys, note FROM settings_changes ORDER BY keys")
        assert sorted(notes) == sorted(
            (key, f"moved out: {config.resolve()} is in force only while given")
            for key in {**BASE, "research.endpoint.oa.timeoutMs": 1500}
        )
        assert rt.settings.scoped(SearchScope()).get("research.endpoint.oa.timeoutMs") is None

    async with await Runtime.open(config, home=home) as rt:  # the same file: as before the migration
        scoped = rt.settings.scoped(SearchScope())
        assert scoped.get_int("research.endpoint.oa.timeoutMs", 0) == 1500
        assert scoped.get("research.endpoint.oa.baseUrl") == "http://127.0.0.1:9/oa"
        assert scoped.get_bool("research.provenance", False) is True


def test_an_endpoint_removed_from_the_file_is_absent_from_providers(tmp_path, home):
    config = write(
        tmp_path / "zarniwoop.yaml", {**BASE, **endpoint("extra", "arxiv", "http://127.0.0.1:9/ax")}
    )
    ids = [
        p["id"]
        for p in json.loads(run_cli("--config", str(config), "providers", "--json", home=home).stdout)[
            "providers"
        ]
    ]
    assert "extra" in ids and "oa" in ids
    write(config, BASE)
    ids = [
        p["id"]
        for p in json.loads(run_cli("--config", str(config), "providers", "--json", home=home).stdout)[
            "providers"
        ]
    ]
    assert "extra" not in ids and "oa" in ids


def test_another_config_file_does_not_see_the_first_one_s_keys(tmp_path, home):
    first = write(tmp_path / "a.yaml", {"research.deadlineMs": 9000})
    got = json.loads(
        run_cli("--config", str(first), "settings", "get", "research.deadlineMs", "--json", home=home).stdout
    )
    assert (got["value"], got["source"]) == ("9000", f"config file {first}")
    second = write(tmp_path / "b.yaml", {"research.cache.ttlSeconds": 60})
    got = json.loads(
        run_cli("--config", str(second), "settings", "get", "research.deadlineMs", "--json", home=home).stdout
    )
    assert got["value"] != "9000" and not str(got["source"]).startswith("config file")


async def test_a_file_s_org_units_and_inline_keys_are_in_force_only_while_given(tmp_path, home):
    tenants = {
        "acme": {
            "teams": {"nlp": {}},
            "accounts": {
                "mike": {
                    "teams": ["nlp"],
                    "llm": {"providers": [{"provider": "anthropic", "api_key": "sk-ant-FILE-ONLY-7070"}]},
                }
            },
        }
    }
    config = tmp_path / "org.yaml"
    config.write_text(yaml.safe_dump({"tenants": tenants}))
    async with await Runtime.open(config, home=home) as rt:
        mike = rt.org.unit("acme", "account", "mike")
        assert mike is not None and mike.teams == ("nlp",)
        secret = rt.credentials.get("acme", "account", "mike", "inline:anthropic:0")
        assert secret is not None and secret.reveal() == "sk-ant-FILE-ONLY-7070"
        listed = [(c.owner, c.name, c.origin) for c in rt.credentials.list("acme")]
        assert listed == [("mike", "inline:anthropic:0", "config file")]
        stored = await rt.db.fetchall(
            "SELECT COUNT(*) FROM org_units UNION ALL SELECT COUNT(*) FROM credentials"
        )
        assert [n for (n,) in stored] == [0, 0]
    async with await Runtime.open(None, home=home) as rt:
        assert rt.org.unit("acme", "account", "mike") is None
        assert rt.credentials.get("acme", "account", "mike", "inline:anthropic:0") is None
        assert rt.credentials.list("acme") == []


async def test_org_units_an_earlier_version_stored_from_a_file_move_out(tmp_path, home):
    async with await Runtime.open(None, home=home) as rt:
        for origin, name in (("config", "from-file"), ("admin", "by-admin")):
            await rt.db.execute(
                "INSERT INTO org_units (tenant, kind, name, team, teams, llm, origin, updated_at) "
                "VALUES ('acme', 'account', ?, NULL, '[]', '{}', ?, '2026-12-01T00:00:00+00:00')",
                (name, origin),
            )
            await rt.credentials.set(
                "acme", "account", name, "inline:openai:0", f"sk-{name}", origin="config"
            )
        await rt.db.execute("DELETE FROM schema_version WHERE version = 35")
        await rt.db.execute(
            "CREATE TABLE config_seeded (source TEXT NOT NULL, tenant TEXT NOT NULL, "
            "project TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (source, tenant, project, key))"
        )
    async with await Runtime.open(None, home=home) as rt:
        assert [u.name for u in rt.org.units("acme")] == ["by-admin"]
        assert [c.owner for c in rt.credentials.list("acme")] == ["by-admin"]

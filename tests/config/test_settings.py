"""SettingService cascade, YAML seeding and secrets at rest."""

from __future__ import annotations

import os
import stat

import pytest

from zarniwoop.config.file import load_config
from zarniwoop.contract import ConfigError, SearchScope
from zarniwoop.runtime import Runtime

from ..support.runtime import write_config

pytestmark = pytest.mark.anyio


async def test_cascade_innermost_wins_per_key(tmp_path):
    config = {
        "settings": {
            "research.deadlineMs": 1000,
            "research.provenance": True,
            "research.default.academic": "openalex",
        },
        "tenants": {
            "acme": {
                "settings": {"research.deadlineMs": 2000},
                "projects": {
                    "review": {"settings": {"research.deadlineMs": 3000, "research.provenance": False}}
                },
            }
        },
    }
    async with await Runtime.open(write_config(tmp_path, config), home=tmp_path / "home") as rt:
        svc = rt.settings
        system = svc.scoped(SearchScope("other", "p"))
        tenant = svc.scoped(SearchScope("acme", "elsewhere"))
        project = svc.scoped(SearchScope("acme", "review"))
        call = svc.scoped(SearchScope("acme", "review"), overrides={"research.deadlineMs": "4000"})
        assert [s.get_int("research.deadlineMs", 0) for s in (system, tenant, project, call)] == [
            1000,
            2000,
            3000,
            4000,
        ]
        assert [s.row("research.deadlineMs").level for s in (system, tenant, project)] == [
            "system",
            "tenant",
            "project",
        ]
        assert project.get_bool("research.provenance", True) is False
        assert tenant.get_bool("research.provenance", False) is True
        assert project.get("research.default.academic") == "openalex"
        assert project.get_int("research.cache.ttlSeconds", 0) == 600  # built-in default
        assert project.row("research.cache.ttlSeconds").level == "builtin"


async def test_env_and_file_references_are_expanded_and_secrets_sealed(tmp_path, monkeypatch):
    monkeypatch.setenv("ZW_TEST_KEY", "serper-secret-ABC")
    (tmp_path / "key.txt").write_text("brave-secret-XYZ\n")
    config = {
        "settings": {
            "research.endpoint.serper.apiKey": "${env:ZW_TEST_KEY}",
            "research.endpoint.brave.apiKey": "${file:key.txt}",
        }
    }
    home = tmp_path / "home"
    async with await Runtime.open(write_config(tmp_path, config), home=home) as rt:
        scoped = rt.settings.scoped(SearchScope())
        assert scoped.secret("research.endpoint.serper.apiKey").reveal() == "serper-secret-ABC"
        assert scoped.get("research.endpoint.brave.apiKey") == "brave-secret-XYZ"
        assert "serper-secret" not in repr(scoped.secret("research.endpoint.serper.apiKey"))
        assert scoped.row("research.endpoint.serper.apiKey").type == "PASSWORD"
    raw = b"".join(p.read_bytes() for p in home.iterdir() if p.name.startswith("zarniwoop.db"))
    assert b"serper-secret" not in raw and b"brave-secret" not in raw
    assert stat.S_IMODE(os.stat(home / "master.key").st_mode) == 0o600


async def test_master_key_from_environment_and_wrong_key_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ZARNIWOOP_MASTER_KEY", "correct horse battery staple")
    path = write_config(tmp_path, {"settings": {"research.endpoint.serper.apiKey": "k-123"}})
    async with await Runtime.open(path, home=tmp_path / "home") as rt:
        assert rt.settings.scoped(SearchScope()).get("research.endpoint.serper.apiKey") == "k-123"
        await rt.settings.set("_system", "_tenant", "research.endpoint.exa.apiKey", "k-456")
        stored = await rt.db.fetchall("SELECT key, value FROM settings WHERE key LIKE '%apiKey'")
    # the file's key is never stored; the one `settings set` wrote is stored sealed
    assert [key for key, _ in stored] == ["research.endpoint.exa.apiKey"] and "k-456" not in stored[0][1]
    assert not (tmp_path / "home" / "master.key").exists()
    monkeypatch.setenv("ZARNIWOOP_MASTER_KEY", "another key")
    with pytest.raises(ConfigError, match="wrong master key or tampered value"):
        await Runtime.open(None, home=tmp_path / "home")


async def test_migrations_are_versioned_and_idempotent(tmp_path):
    home = tmp_path / "home"
    for _ in range(2):
        async with await Runtime.open(None, home=home) as rt:
            rows = await rt.db.fetchall("SELECT version, name FROM schema_version ORDER BY version")
    assert rows[0] == (1, "0001_settings_cooldowns.sql")
    assert len(rows) == len({r[0] for r in rows})


def test_load_config_names_the_bad_key(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("tenants:\n  acme:\n    projects:\n      p1:\n        colour: blue\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.key == "tenants.acme.projects.p1.colour"
    # the project's words, with what that section accepts (nothing is close to `colour`)
    assert info.value.reason == "is not a known key; expected team, settings, llm"

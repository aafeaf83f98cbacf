"""An LLM provider's `ai.provider.<instance>.baseUrl` written below system level meets the same
write-time SSRF check as a search endpoint's (`config/trust.py: check_writes`): the CLI's
`settings set`, the config file and `PUT /v1/settings` refuse a private, loopback or link-local
literal or `localhost`, naming the key, and write nothing of the batch; the operator's system-level
`research.allowPrivateEndpoints: true` lifts it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from zarniwoop.config.trust import check_writes
from zarniwoop.surfaces.cli import app
from zarniwoop.surfaces.http import create_app

from ..support.runtime import only

KEY = "ai.provider.mine.baseUrl"
BAD = {
    "http://127.0.0.1:11434": "127.0.0.1 is not a public address",
    "http://169.254.169.254/latest/meta-data": "169.254.169.254 is not a public address",
    "http://10.1.2.3/v1": "10.1.2.3 is not a public address",
    "http://[::1]:8080/v1": "::1 is not a public address",
    "http://localhost:1234/v1": "localhost is a loopback name",
    "http://llm.localhost/v1": "llm.localhost is a loopback name",
}


def _config(tmp_path: Path, settings: dict | None = None, tenant_settings: dict | None = None) -> Path:
    tenants = {"acme": {"settings": tenant_settings or {}, "projects": {"p1": {}}}}
    path = tmp_path / "zarniwoop.yaml"
    path.write_text(yaml.safe_dump({"settings": {**only(), **(settings or {})}, "tenants": tenants}))
    return path


def _cli(config: Path, *args: str, project: str | None = None):
    scope = ["--tenant", "acme", *(["--project", project] if project else [])]
    return CliRunner().invoke(app, ["--config", str(config), *scope, *args], catch_exceptions=False)


@pytest.mark.parametrize("url", BAD)
def test_check_writes_refuses_a_private_llm_base_url_below_system_level(url):
    for level in ("tenant", "project"):
        [error] = check_writes(level, {KEY: url, "ai.provider.mine.type": "openai"})
        assert error.key == KEY
        assert error.message.startswith(f"config error: {KEY}: {BAD[url]}")
        assert error.message.endswith(
            f"set research.allowPrivateEndpoints: true at system level to allow it (a {level}-level LLM provider URL)"
        )
    assert check_writes("system", {KEY: url}) == []
    assert check_writes("tenant", {KEY: url}, allow_private_endpoints=True) == []


def test_check_writes_lets_a_public_llm_base_url_through_and_refuses_a_bad_scheme():
    assert check_writes("tenant", {KEY: "https://api.example.org/v1", "ai.provider.a.b.baseUrl": None}) == []
    assert [e.key for e in check_writes("project", {"ai.provider.a.b.baseUrl": "file:///etc/passwd"})] == [
        "ai.provider.a.b.baseUrl"
    ]


def test_cli_settings_set_refuses_a_tenant_llm_base_url_at_loopback(tmp_path, home):
    config = _config(tmp_path)
    refused = _cli(config, "settings", "set", KEY, "http://127.0.0.1:11434", "--level", "tenant")
    assert refused.exit_code == 2
    assert KEY in refused.output and "127.0.0.1 is not a public address" in refused.output
    assert "Traceback" not in refused.output
    listing = _cli(config, "settings", "list")
    assert listing.exit_code == 0 and KEY not in listing.output
    # the operator's own level is trusted
    assert _cli(config, "settings", "set", KEY, "http://127.0.0.1:11434", "--level", "system").exit_code == 0


def test_cli_settings_set_with_the_system_switch_allows_it(tmp_path, home):
    config = _config(tmp_path, {"research.allowPrivateEndpoints": True})
    written = _cli(
        config, "settings", "set", KEY, "http://127.0.0.1:11434", "--level", "project", project="p1"
    )
    assert written.exit_code == 0, written.output


def test_the_config_file_refuses_a_tenant_llm_base_url_at_loopback(tmp_path, home):
    config = _config(tmp_path, tenant_settings={KEY: "http://localhost:11434"})
    refused = _cli(config, "settings", "list")
    assert refused.exit_code == 2
    assert KEY in refused.output and "localhost is a loopback name" in refused.output


@pytest.fixture
def console(tmp_path):
    app_ = create_app(config=_config(tmp_path), home=tmp_path / "home")
    with TestClient(app_, raise_server_exceptions=False) as client:
        store = app_.state.zarniwoop.runtime.tokens
        tokens = {
            who: client.portal.call(store.create, tenant, project, "admin").token  # type: ignore[union-attr]
            for who, (tenant, project) in {"tenant": ("acme", "*"), "operator": ("*", "*")}.items()
        }
        yield client, tokens


def test_put_settings_refuses_a_tenant_llm_base_url_at_loopback_and_writes_nothing(console):
    client, tokens = console
    headers = {"Authorization": f"Bearer {tokens['tenant']}"}
    before = client.get("/v1/settings?level=tenant", headers=headers).json()["settings"]
    batch = {
        "ai.provider.mine.type": "openai",
        "ai.provider.mine.apiKey": "sk-own-1234567890",
        KEY: "http://10.0.0.7/v1",
    }
    put = client.put("/v1/settings", headers=headers, json={"level": "tenant", "set": batch})
    assert put.status_code == 422
    error = put.json()["error"]
    assert error["field"] == KEY
    assert error["message"].startswith(f"{KEY}: 10.0.0.7 is not a public address")
    assert client.get("/v1/settings?level=tenant", headers=headers).json()["settings"] == before
    # a public URL in the same batch is written
    batch[KEY] = "https://llm.example.org/v1"
    put = client.put("/v1/settings", headers=headers, json={"level": "tenant", "set": batch})
    assert put.status_code == 200 and put.json() == {"written": 3}
    # the operator writes the loopback URL at system level
    operator = {"Authorization": f"Bearer {tokens['operator']}"}
    put = client.put(
        "/v1/settings", headers=operator, json={"level": "system", "set": {KEY: "http://127.0.0.1:9/v1"}}
    )
    assert put.status_code == 200


LOOPBACK_SPELLINGS = [
    "http://0x7f.1/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://127.1/",
    "http://[::ffff:127.0.0.1]/",
]
"""Every one is 127.0.0.1 to the C resolver the guard meets at request time (issue 25 item 10)."""


@pytest.mark.parametrize("key", ["research.endpoint.mine.baseUrl", KEY])
def test_settings_set_refuses_every_loopback_spelling_at_tenant_level(tmp_path, home, console, key):
    config = _config(tmp_path)
    client, tokens = console
    headers = {"Authorization": f"Bearer {tokens['tenant']}"}
    for url in LOOPBACK_SPELLINGS:
        refused = _cli(config, "settings", "set", key, url, "--level", "tenant")
        assert refused.exit_code == 2, (url, refused.output)
        assert key in refused.output and "(loopback)" in refused.output and "Traceback" not in refused.output
        # a new endpoint names its protocol in the same batch (an unknown endpoint id is refused first)
        batch = {
            key: url,
            **({"research.endpoint.mine.protocol": "searxng"} if key.startswith("research.") else {}),
        }
        put = client.put("/v1/settings", headers=headers, json={"level": "tenant", "set": batch})
        assert put.status_code == 422, url
        assert put.json()["error"]["field"] == key
        assert "is not a public address (loopback)" in put.json()["error"]["message"]
    assert key not in _cli(config, "settings", "list").output


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("research.endpoint.wikipedia.userAgent", "zarniwoop\r\nX-Injected: 1"),
        ("research.endpoint.openalex.contactEmail", "ops@example.org\n"),
        ("research.endpoint.stackexchange.site", "stackoverflow\rx"),
        ("research.endpoint.wikipedia.userAgent", "nul\x00byte"),
    ],
)
def test_control_characters_are_refused_at_write_naming_the_key(tmp_path, home, console, key, value):
    client, tokens = console
    for level, token in (("tenant", tokens["tenant"]), ("system", tokens["operator"])):
        put = client.put(
            "/v1/settings",
            headers={"Authorization": f"Bearer {token}"},
            json={"level": level, "set": {key: value}},
        )
        assert put.status_code == 422, (level, put.text)
        assert put.json()["error"]["field"] == key and "control character" in put.json()["error"]["message"]
    refused = _cli(_config(tmp_path), "settings", "set", key, value, "--level", "tenant")
    assert refused.exit_code == 2 and key in refused.output and "control character" in refused.output

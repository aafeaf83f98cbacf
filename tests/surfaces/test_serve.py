"""`zarniwoop serve` as a real process (uvicorn on loopback), and the `tokens` commands that guard it
(in-process, `support/cli.py`: beside a running server they share its database as a process does)."""

from __future__ import annotations

import json

import httpx
import pytest

from zarniwoop.surfaces.cli.serve import is_loopback

from ..support.bodies import wikipedia_pages
from ..support.cli import Ran, never_serve, run_cli
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, write_config
from ..support.served import served

WIKI = "/w/w/rest.php/v1/search/page"


def cli(home, config, *args: str) -> Ran:
    return run_cli("--config", str(config), *args, home=home)


@pytest.fixture
def config(tmp_path, emulator):
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora", "Aurora borealis")))
    settings = {
        **only(),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/w"),
        "research.cache.ttlSeconds": 0,
    }
    return write_config(tmp_path, {"settings": settings})


def test_with_tokens_configured_serve_prints_none_and_enforces_them(tmp_path, config):
    home = tmp_path / "home"
    created = cli(
        home, config, "tokens", "create", "--tenant", "acme", "--project", "a", "--role", "user", "--json"
    )
    assert created.code == 0, created.stderr
    issued = json.loads(created.stdout)
    assert set(issued) == {"token", "id", "tenant", "project", "role"}
    assert (issued["tenant"], issued["project"], issued["role"]) == ("acme", "a", "user")
    with served(config, home) as server:
        assert server.token is None
        assert "admin token" not in server.banner
        auth = {"Authorization": f"Bearer {issued['token']}"}
        with httpx.Client(base_url=server.url, timeout=60) as http:
            assert http.get("/healthz").json()["status"] == "ok"
            assert http.post("/v1/research/search", json={"query": "a", "modality": "web"}).status_code == 401
            found = http.post(
                "/v1/research/search", headers=auth, json={"query": "aurora", "modality": "web"}
            )
            assert found.status_code == 200
            assert [h["title"] for h in found.json()["hits"]] == ["Aurora", "Aurora borealis"]
            assert http.get("/v1/usage", headers=auth, params={"project": "b"}).status_code == 403
            bad = http.post(
                "/v1/research/search", headers=auth, json={"query": "x" * 100_000, "modality": "web"}
            )
            assert bad.status_code == 422
            assert bad.json() == {
                "error": {"field": "query", "message": "query: must be at most 2000 characters, got 100000"}
            }
            huge = http.post(
                "/v1/research/search", headers=auth, json={"query": "x" * 1_048_576, "modality": "web"}
            )
            assert huge.status_code == 413
            assert huge.json() == {"error": {"message": "request body over 1048576 bytes"}}
            listed = cli(home, config, "tokens", "list", "--json")
            [record] = json.loads(listed.stdout)["tokens"]
            revoked = cli(home, config, "tokens", "revoke", record["id"])
            assert revoked.code == 0 and f"revoked {record['id']}" in revoked.stdout
            # the running server shares the database: the revocation applies at once
            assert http.get("/v1/research/providers", headers=auth).status_code == 401


def test_refuses_a_non_loopback_address_without_tokens(tmp_path, config, monkeypatch):
    never_serve(monkeypatch)
    result = cli(tmp_path / "home", config, "serve", "--host", "0.0.0.0", "--port", "0")
    assert result.code == 2
    assert result.stderr.strip() == (
        "error: refusing to serve on 0.0.0.0 with no API token configured; create one first "
        "(zarniwoop tokens create --tenant T --project P --role admin) or bind 127.0.0.1"
    )
    assert result.stdout == ""


def test_printed_admin_token_works_and_sees_last_errors(tmp_path, emulator, config):
    emulator.add("/bad/w/rest.php/v1/search/page", Reply(status=502))
    settings = {
        **only(),
        **endpoint("flaky", "wikipedia", f"{emulator.url}/bad"),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/w"),
        "research.cache.ttlSeconds": 0,
    }
    config = write_config(tmp_path, {"settings": settings})
    with served(config, tmp_path / "home") as server:
        auth = {"Authorization": f"Bearer {server.token}"}
        with httpx.Client(base_url=server.url, headers=auth, timeout=60) as http:
            result = http.post("/v1/research/search", json={"query": "aurora", "modality": "web"}).json()
            assert result["providerInstanceId"] == "wiki"
            routing = http.get("/v1/_routing").json()
            assert {r["id"]: r["lastError"] for r in routing["search"]}["flaky"] == "HTTP 502"
            other = http.get("/v1/research/providers", params={"tenant": "acme", "project": "x"})
            assert other.status_code == 200  # the printed token is an operator token: any scope


def test_tokens_create_validates_and_revoke_names_the_missing_token(tmp_path, config):
    home = tmp_path / "home"
    bad = cli(home, config, "tokens", "create", "--role", "root")
    assert bad.code == 2
    assert bad.stderr.strip() == "error: role: expected one of user, admin, tenant-admin, got 'root'"
    missing = cli(home, config, "tokens", "revoke", "tok_000000")
    assert missing.code == 2
    assert missing.stderr.strip() == "error: token: no token 'tok_000000' exists"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("127.0.0.2", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.1.2.3", False),
        ("example.org", False),
    ],
)
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_the_banner_names_the_web_ui_and_metrics_reads_the_server(tmp_path, config):
    with served(config, tmp_path / "home") as server:
        assert (
            f"  Web UI    {server.url}/       (paste the token below into it)" in server.banner.splitlines()
        )
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}) as http:
            assert (
                http.post("/v1/research/search", json={"query": "aurora", "modality": "web"}).status_code
                == 200
            )
            assert http.get("/docs").status_code == 404  # its JavaScript would come from a CDN
        remote = cli(tmp_path / "home", config, "metrics", "--url", server.url, "--token", str(server.token))
        assert remote.code == 0, remote.stderr
        served_searches = [
            line
            for line in remote.stdout.splitlines()
            if line.startswith("zarniwoop_research_dispatch_total{")
        ]
        assert served_searches and float(served_searches[0].rsplit(" ", 1)[1]) == 1.0
        refused = cli(tmp_path / "home", config, "metrics", "--url", server.url, "--token", "zw_wrong")
        assert refused.code == 5 and "answered HTTP 401" in refused.stderr
    local = cli(tmp_path / "home", config, "metrics")
    assert local.code == 0
    assert local.stderr.startswith("note: these are this command's own counters")

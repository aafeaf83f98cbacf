"""A refresh asks the providers again (issue 13): `"cache": false` or `Cache-Control: no-cache` over
HTTP, `--no-cache` on the CLI; a cached answer says when it was fetched."""

from __future__ import annotations

import json
import time
from datetime import datetime

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app as cli_app
from zarniwoop.surfaces.http import create_app

from ..support.bodies import openalex_works, wikipedia_pages
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, write_config

WIKI = "/w/w/rest.php/v1/search/page"


def test_http_cache_switch_and_header(tmp_path, emulator):
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora", "Aurora borealis")))
    config = write_config(
        tmp_path, {"settings": {**only(), **endpoint("wiki-w", "wikipedia", f"{emulator.url}/w")}}
    )
    app = create_app(config=config, home=tmp_path / "home")
    with TestClient(app) as client:
        token = client.portal.call(
            app.state.zarniwoop.runtime.tokens.create, "default", "default", "user"
        ).token
        auth = {"Authorization": f"Bearer {token}"}
        body = {"query": "aurora", "modality": "encyclopedia"}
        before = time.time()
        first = client.post("/v1/research/search", json=body, headers=auth).json()
        second = client.post("/v1/research/search", json=body, headers=auth).json()
        assert (first["cached"], second["cached"]) == (False, True)
        assert "cachedAt" not in first
        fetched = datetime.fromisoformat(second["cachedAt"].replace("Z", "+00:00"))
        # stored by the first search: bracketed by this test's readings (whole seconds on the wire)
        assert int(before) <= fetched.timestamp() <= time.time()
        assert len(emulator.requests(WIKI)) == 1
        fresh = client.post("/v1/research/search", json={**body, "cache": False}, headers=auth).json()
        assert fresh["cached"] is False and len(emulator.requests(WIKI)) == 2
        header = client.post("/v1/research/search", json=body, headers={**auth, "Cache-Control": "no-cache"})
        assert header.json()["cached"] is False and len(emulator.requests(WIKI)) == 3
        assert header.headers["cache-control"] == "no-store"  # a tenant's answer is no browser's to keep
        assert client.post(
            "/v1/research/search", json=body, headers={**auth, "Cache-Control": "max-age=0"}
        ).json()["cached"]  # what a browser sends on its own: not a refresh
        # the refreshed answer replaced the cached one
        again = client.post("/v1/research/search", json=body, headers=auth).json()
        assert again["cached"] is True and len(emulator.requests(WIKI)) == 3
        bad = client.post("/v1/research/search", json={**body, "cache": "maybe"}, headers=auth)
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "cache"


def test_cli_no_cache_skips_the_shared_cache(tmp_path, home, emulator, redis_config):
    """Across CLI runs the cache is Redis's: a repeat is cached, `--no-cache` asks again (search,
    rich's searches and investigate's planned searches alike)."""
    emulator.add("/oa/works", Reply.json(openalex_works(3)))
    settings = {**only(), **endpoint("oa", "openalex", f"{emulator.url}/oa")}
    config = write_config(tmp_path, {"settings": settings, **redis_config})
    runner = CliRunner()

    def calls() -> int:
        return len(emulator.requests("/oa/works"))

    search = ["--config", str(config), "search", "crispr", "-m", "academic", "--json"]
    assert json.loads(runner.invoke(cli_app, search).stdout)["cached"] is False
    assert json.loads(runner.invoke(cli_app, search).stdout)["cached"] is True
    assert calls() == 1
    assert json.loads(runner.invoke(cli_app, [*search, "--no-cache"]).stdout)["cached"] is False
    assert calls() == 2
    investigate = ["--config", str(config), "investigate", "crispr study", "--json"]
    first = json.loads(runner.invoke(cli_app, investigate).stdout)
    repeat = json.loads(runner.invoke(cli_app, investigate).stdout)
    before = calls()
    fresh = json.loads(runner.invoke(cli_app, [*investigate, "--no-cache"]).stdout)
    assert [s["cached"] for s in repeat["searches"]] == [True] * len(first["searches"])
    assert [s["cached"] for s in fresh["searches"]] == [False] * len(first["searches"])
    assert calls() == before + len(first["searches"])

"""One cache and one flight for every process of a deployment (issue 27), with real processes on
loopback against the provider emulator: CLI calls one after another, and `serve --workers 2`.

Spawning processes is slow on a shared machine: these tests are few, and each bounds its waits.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, write_config
from ..support.served import serve_command, served, server_env

WIKI = "/w/w/rest.php/v1/search/page"
FAST = {"rateLimit.perSecond": 1000}


def _config(tmp_path: Path, settings: dict[str, Any]) -> Path:
    return write_config(tmp_path, {"settings": {**only(), **settings}})


def _cli(config: Path, home: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        serve_command("--config", str(config), *args),
        env=server_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    body: dict[str, Any] = json.loads(done.stdout)
    return body


def test_three_cli_processes_share_one_cache(tmp_path, emulator):
    """`search X`, `search X`, `search X --no-cache`, each its own process: the provider sees 2 calls."""
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora", "Aurora borealis")))
    config = _config(tmp_path, endpoint("wiki", "wikipedia", f"{emulator.url}/w", **FAST))
    home = tmp_path / "home"
    search = ("search", "Polar  Glow", "--json")
    first = _cli(config, home, *search)
    second = _cli(config, home, *search)
    fresh = _cli(config, home, *search, "--no-cache")
    assert len(emulator.requests(WIKI)) == 2
    assert (first["cached"], second["cached"], fresh["cached"]) == (False, True, False)
    assert second["query"] == "Polar  Glow" and [h["title"] for h in second["hits"]] == ["Aurora", "Aurora borealis"]
    assert "cachedAt" in second and "cachedAt" not in first
    assert (home / "cache.db").exists()
    stored = b"".join(p.read_bytes() for p in home.glob("cache.db*")).lower()
    assert b"aurora borealis" in stored  # the answer is kept as shown; the query never is
    assert b"polar" not in stored


async def _search(url: str, token: str, query: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}", "Connection": "close"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        response = await http.post("/v1/research/search", json={"query": query, "modality": "web"})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_two_workers_share_one_cache_and_one_flight(tmp_path, emulator):
    """`serve --workers 2`: the same search 20 times on fresh connections → 1 upstream call; then
    50 identical concurrent searches, spread over both workers (fresh connections) → 1 more call."""
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora")))
    emulator.add("/slow/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Slow"), delay=1.0))
    settings = {
        **endpoint("wiki", "wikipedia", f"{emulator.url}/w", **FAST),
        "research.default.web": "wiki",
        "research.default.encyclopedia": "slow",
        **endpoint("slow", "wikipedia", f"{emulator.url}/slow", **FAST),
    }
    config = _config(tmp_path, settings)
    with served(config, tmp_path / "home", "--workers", "2") as server:
        assert server.token is not None
        repeats = [asyncio.run(_search(server.url, server.token, "aurora")) for _ in range(20)]
        assert len(emulator.requests(WIKI)) == 1
        assert [r["cached"] for r in repeats] == [False] + [True] * 19

        async def burst() -> list[dict[str, Any]]:
            headers = {"Authorization": f"Bearer {server.token}", "Connection": "close"}

            async def one() -> dict[str, Any]:
                async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as http:
                    response = await http.post(
                        "/v1/research/search", json={"query": "polar lights", "modality": "encyclopedia"}
                    )
                assert response.status_code == 200, response.text
                body: dict[str, Any] = response.json()
                return body

            return list(await asyncio.gather(*(one() for _ in range(50))))

        results = asyncio.run(burst())
        slow = emulator.requests("/slow/w/rest.php/v1/search/page")
        assert len(slow) == 1, len(slow)
        assert [r["hits"][0]["title"] for r in results] == ["Slow"] * 50
        assert [r["providerInstanceId"] for r in results] == ["slow"] * 50

"""A running server's background work (issue 15): `projects stop` from another process reaches it,
and scheduled discovery runs once per interval across replicas."""

from __future__ import annotations

import subprocess
import time

import httpx

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, write_config
from ..support.served import serve_command, served, server_env

WIKI = "/w/w/rest.php/v1/search/page"


def test_projects_stop_in_another_process_reaches_the_running_server(tmp_path, emulator):
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora")))
    config = write_config(
        tmp_path, {"settings": {**only(), **endpoint("wiki", "wikipedia", f"{emulator.url}/w")}}
    )
    home = tmp_path / "home"
    with served(config, home) as server:
        auth = {"Authorization": f"Bearer {server.token}"}
        searched = httpx.post(
            f"{server.url}/v1/research/search",
            params={"tenant": "acme", "project": "review"},
            json={"query": "aurora", "modality": "encyclopedia"},
            headers=auth,
        )
        assert searched.status_code == 200  # the server now holds acme/review's provider instances
        stop = subprocess.run(
            serve_command("--config", str(config), "--tenant", "acme", "projects", "stop", "review"),
            env=server_env(home),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert stop.returncode == 0, stop.stderr
    lines = stop.stdout.splitlines()
    assert lines[0] == "stopped acme/review: 0 provider instances disposed"  # the CLI process held none
    disposed = int(lines[1].removeprefix("the running server disposed ").split()[0])
    assert disposed >= 1 and lines[1].endswith("provider instances of acme/review")


def test_scheduled_discovery_runs_once_across_two_replicas(tmp_path, emulator):
    emulator.add(
        "/ollama/api/tags", Reply.json({"models": [{"name": "llama3.2:latest", "model": "llama3.2:latest"}]})
    )
    settings = {
        **only(),
        "ai.provider.homelab.type": "ollama",
        "ai.provider.homelab.baseUrl": f"{emulator.url}/ollama",
        "ai.discovery.intervalMinutes": 1,
    }
    config = write_config(tmp_path, {"settings": settings})
    home = tmp_path / "home"
    with served(config, home), served(config, home):
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not emulator.requests("/ollama/api/tags"):
            time.sleep(0.2)
        time.sleep(2.0)  # the other replica had its chance too
        calls = len(emulator.requests("/ollama/api/tags"))
    assert calls == 1

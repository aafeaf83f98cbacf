"""A running server's background work (issue 15): `projects stop` from another process reaches it,
and scheduled discovery runs once per interval across replicas."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, write_config
from ..support.served import serve_command, served, server_env
from ..support.waiting import until

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
    # two replicas: a home each (so a stderr each), one database, one master key
    database = f"sqlite:///{tmp_path / 'shared.db'}"
    config = write_config(tmp_path, {"settings": settings, "database_url": database})
    env = {"ZARNIWOOP_MASTER_KEY": "discovery-replicas-share-this-passphrase"}
    homes = [tmp_path / "a", tmp_path / "b"]
    told = ("-c", _TELL_CLAIMS)
    with (
        served(config, homes[0], env=env, python_args=told),
        served(config, homes[1], env=env, python_args=told),
    ):
        # each replica has had its chance: its claim of the first interval was decided, either way
        firsts = until(lambda: _first_claims(homes), "both replicas' first claim of the discovery interval")
        until(lambda: emulator.requests("/ollama/api/tags"), "the winner's discovery, after its claim")
        calls = len(emulator.requests("/ollama/api/tags"))
    assert sorted(firsts) == [False, True]
    assert calls == 1


# `python -c` in front of `-m zarniwoop …`: the server, with each claim of a maintenance interval
# told on its stderr (the claim itself unchanged), so the test sees a replica's turn that left no
# other trace (the loser of a claim does nothing) instead of waiting and hoping it came
_TELL_CLAIMS = """
import runpy, sys
import zarniwoop.storage.retention as retention
claim = retention.claim
async def told(db, **kwargs):
    won = await claim(db, **kwargs)
    print(f"test-claim {kwargs.get('task')} {won}", file=sys.stderr, flush=True)
    return won
retention.claim = told
sys.argv = sys.argv[2:]  # ['-c', '-m', 'zarniwoop', ...]: the arguments zarniwoop's own start sees
runpy.run_module("zarniwoop", run_name="__main__", alter_sys=True)
"""


def _first_claims(homes: list[Path]) -> list[bool] | None:
    """Whether each replica won its first claim of the discovery interval; None until all told."""
    firsts = []
    for home in homes:
        lines = (home / "serve.stderr").read_text().splitlines()
        told = [line.endswith(" True") for line in lines if line.startswith("test-claim llm.discovery ")]
        if not told:
            return None
        firsts.append(told[0])
    return firsts

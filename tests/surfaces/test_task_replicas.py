"""A task outlives its replica (issue 45): two `zarniwoop serve` replicas on one PostgreSQL behind
haproxy (docs/deploy.md). A task started through haproxy is polled on either replica; `kill -9` of
the replica running it while one of its searches is held upstream → the other replica takes it over
once the lease lapses and completes it, and the emulator's counts show the finished searches were
not sent again (only the one the dead replica never saw answered is).

Skips, naming what is missing, without haproxy or `ZARNIWOOP_TEST_POSTGRES_URL`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from ..support.backends import PG_ENV, _pg, _with_schema
from ..support.bodies import openalex_works, wikipedia_pages
from ..support.emulator import Emulator, Reply
from ..support.runtime import endpoint, only, write_config
from ..support.served import Served, served
from ..support.waiting import until
from .test_replicas import _end, _free_ports, _haproxy, haproxy_config

pytestmark = [pytest.mark.xdist_group(__name__), pytest.mark.process]

MASTER_KEY = "task-replicas-share-this-passphrase"
QUESTION = "What evidence is there for off-target effects of CRISPR?"
ACADEMIC = "/oa/works"
WIKI = "/wiki/w/rest.php/v1/search/page"
LEASE_SECONDS = 2


def _need() -> tuple[str, str]:
    binary, pg = _haproxy(), os.environ.get(PG_ENV)
    missing = [
        m
        for m, ok in (("haproxy (apt-get install haproxy)", binary), (f"PostgreSQL ({PG_ENV})", pg))
        if not ok
    ]
    if missing:
        pytest.skip("the task takeover test needs " + ", ".join(missing))
    assert binary and pg
    return binary, pg


async def _make_tokens(config: Path, home: Path) -> dict[str, str]:
    from zarniwoop.runtime import Runtime

    runtime = await Runtime.open(config, home=home)
    try:
        return {
            "alice": (await runtime.tokens.create("acme", "review", "user", label="alice")).token,
            "globex": (await runtime.tokens.create("globex", "review", "user", label="globex")).token,
        }
    finally:
        await runtime.aclose()


@pytest.fixture
def held_first_search(emulator: Emulator) -> Iterator[threading.Event]:
    """The first ACADEMIC search waits upstream until the event is set; later ones answer at once."""
    release = emulator.add_held(ACADEMIC, Reply.json(openalex_works(2, "CRISPR off-target")), first_only=True)
    emulator.add(WIKI, Reply.json(wikipedia_pages("Off-target genome editing")))
    try:
        yield release
    finally:
        release.set()


def test_kill_9_of_the_replica_running_a_task_and_the_other_completes_it(
    tmp_path, emulator, held_first_search
):
    binary, pg = _need()
    schema = f"zw_tasks_{uuid.uuid4().hex[:10]}"
    asyncio.run(_pg(pg, f'CREATE SCHEMA "{schema}"'))
    settings = {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/oa", **{"rateLimit.perSecond": 1000}),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/wiki", **{"rateLimit.perSecond": 1000}),
        "research.cache.ttlSeconds": 0,  # a repeated search would reach the emulator: the counts tell
        "research.cache.ttlSeconds.academic": 0,
        "research.cache.ttlSeconds.encyclopedia": 0,
        "research.investigate.minHits": 1,
        "research.tasks.leaseSeconds": LEASE_SECONDS,
    }
    config = write_config(tmp_path, {"database_url": _with_schema(pg, schema), "settings": settings})
    env = {"ZARNIWOOP_MASTER_KEY": MASTER_KEY}
    with ExitStack() as stack, pytest.MonkeyPatch.context() as patch:
        patch.setenv("ZARNIWOOP_MASTER_KEY", MASTER_KEY)
        stack.callback(lambda: asyncio.run(_pg(pg, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')))
        tokens = asyncio.run(_make_tokens(config, tmp_path / "admin"))
        front, *ports = _free_ports(3)
        replicas: list[Served] = [
            stack.enter_context(served(config, tmp_path / f"home{i}", port=port, env=env))
            for i, port in enumerate(ports)
        ]
        cfg = tmp_path / "haproxy.cfg"
        cfg.write_text(haproxy_config(front, ports))
        log = stack.enter_context((tmp_path / "haproxy.log").open("w"))
        proxy = subprocess.Popen([binary, "-db", "-f", str(cfg)], stdout=log, stderr=subprocess.STDOUT)
        stack.callback(_end, proxy)
        url = f"http://127.0.0.1:{front}"
        alice = {"Authorization": f"Bearer {tokens['alice']}"}
        until(lambda: _up(url), "haproxy answering")

        started = httpx.post(
            f"{url}/v1/research/investigate",
            json={"question": QUESTION, "maxResults": 5},
            headers={**alice, "Prefer": "respond-async"},
            timeout=60,
        )
        assert started.status_code == 202, started.text
        location = started.headers["location"]
        task_id = started.json()["taskId"]
        until(
            lambda: len(emulator.requests(WIKI)) == 2 and emulator.requests(ACADEMIC),
            "all three searches sent",
        )
        until(lambda: _steps(pg, schema, task_id) == 3, "the plan and the two answered searches kept")
        # any replica answers for it, and only to its caller
        for replica in replicas:
            polled = httpx.get(f"{replica.url}{location}", headers=alice, timeout=60).json()
            assert (polled["taskId"], polled["status"]) == (task_id, "working")
            other = httpx.get(
                f"{replica.url}{location}",
                headers={"Authorization": f"Bearer {tokens['globex']}"},
                timeout=60,
            )
            assert other.status_code == 404

        owner_pid, _ = _task_row(pg, schema, task_id)
        [running] = [r for r in replicas if r.pid == owner_pid]
        [survivor] = [r for r in replicas if r.pid != owner_pid]
        os.kill(running.pid, signal.SIGKILL)
        running.process.wait(timeout=60)
        held_first_search.set()

        def finished() -> dict | None:
            try:
                body = httpx.get(f"{url}{location}", headers=alice, timeout=60).json()
            except httpx.TransportError:
                return None
            return body if body.get("status") not in (None, "working") else None

        done = until(finished, "the task finished on the surviving replica", timeout=120)
        assert done["status"] == "completed", done
        assert [s["providerInstanceId"] for s in done["result"]["searches"]] == ["oa", "wiki", "wiki"]
        assert _task_row(pg, schema, task_id) == (survivor.pid, 2)
        # the two wiki searches were answered before the kill and recalled after it; the academic
        # one, held upstream when its replica died, was sent once more
        assert len(emulator.requests(WIKI)) == 2
        assert len(emulator.requests(ACADEMIC)) == 2


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=60).status_code == 200
    except httpx.TransportError:
        return False


def _steps(pg: str, schema: str, task_id: str) -> int:
    [rows] = asyncio.run(
        _pg(pg, f"SELECT COUNT(*) AS n FROM \"{schema}\".research_task_steps WHERE task_id = '{task_id}'")
    )
    return int(rows[0]["n"])


def _task_row(pg: str, schema: str, task_id: str) -> tuple[int, int]:
    """The pid of the process that owns the task (`host:pid:nonce`) and how many runs it took."""
    [rows] = asyncio.run(
        _pg(pg, f"SELECT owner, runs FROM \"{schema}\".research_tasks WHERE id = '{task_id}'")
    )
    return int(rows[0]["owner"].split(":")[1]), int(rows[0]["runs"])

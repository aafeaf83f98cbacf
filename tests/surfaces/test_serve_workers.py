"""`zarniwoop serve --workers 2` as real processes on loopback, against the provider emulator.

Which worker answered is read from `/metrics` (per worker; `zarniwoop_serve_worker_pid`), scraped
over fresh connections until both workers have answered: the counters of each worker show what
it served, the emulator's log what reached the provider.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from zarniwoop.limits.pacing import cell_of
from zarniwoop.surfaces.cli.workers import listening_socket

from ..support.bodies import wikipedia_pages
from ..support.cli import never_serve, run_cli
from ..support.clock import ahead_of_pace
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, write_config
from ..support.served import (
    Served,
    child_pids,
    has_exited,
    served,
    stop,
    wait_for_standby,
    worker_pids,
)
from ..support.waiting import until, until_async

WIKI = "/w/w/rest.php/v1/search/page"
BAD = "/bad/w/rest.php/v1/search/page"
PAID = "/paid/w/rest.php/v1/search/page"
FREE = "/free/w/rest.php/v1/search/page"
FAST = {"rateLimit.perSecond": 1000}
"""No pacing in the way: these tests are about cooldowns and quotas."""


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def shared_store(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The shared state's home: the embedded database (default), PostgreSQL, or Redis (each when
    the tests have one)."""
    if request.param == "sqlite":
        return {}
    if request.param == "postgres":
        return {"database_url": request.getfixturevalue("postgres_url")}
    return dict(request.getfixturevalue("redis_config"))


def _config(tmp_path: Path, settings: dict[str, Any], extra: dict[str, Any] | None = None) -> Path:
    body = {"settings": {**only(), "research.cache.ttlSeconds": 0, **settings}, **(extra or {})}
    return write_config(tmp_path, body)


def _metric(text: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels include `labels`."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def _per_worker_metrics(server: Served, workers: int = 2, tries: int = 400) -> dict[int, str]:
    """`/metrics` of each worker, scraped over fresh connections until each has answered once."""
    seen: dict[int, str] = {}
    auth = {"Authorization": f"Bearer {server.token}"}
    for _ in range(tries):
        with httpx.Client(base_url=server.url, headers=auth, timeout=60) as http:
            response = http.get("/metrics")
        assert response.status_code == 200, response.text
        pid = _metric(response.text, "zarniwoop_serve_worker_pid")
        seen[int(pid)] = response.text
        if len(seen) == workers:
            return seen
    raise AssertionError(f"only workers {sorted(seen)} answered {tries} fresh connections")


async def _searches(url: str, token: str, queries: list[str], modality: str = "web") -> list[dict[str, Any]]:
    """Concurrent searches, each over a connection of its own (so the workers share them)."""

    async def one(query: str) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}", "Connection": "close"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
            response = await http.post("/v1/research/search", json={"query": query, "modality": modality})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    return list(await asyncio.gather(*(one(q) for q in queries)))


def _outcomes(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(a["providerInstanceId"], a["outcome"]) for a in result["attempts"]]


def _until_both_workers_served(
    server: Served, prefix: str, per_round: int, modality: str = "web"
) -> tuple[list[list[dict[str, Any]]], dict[int, str], dict[int, float]]:
    """Rounds of `per_round` concurrent searches of `modality` over fresh connections until both
    workers have served some (the kernel may hand one worker many rounds): the rounds' results, the
    last per-worker metrics and the searches of that modality each worker dispatched."""
    rounds: list[list[dict[str, Any]]] = []
    for round_ in range(20):
        queries = [f"{prefix} {round_} {i}" for i in range(per_round)]
        rounds.append(asyncio.run(_searches(server.url, server.token, queries, modality)))
        metrics = _per_worker_metrics(server)
        served_by = {
            pid: _metric(text, "zarniwoop_research_dispatch_total", modality=modality.upper())
            for pid, text in metrics.items()
        }
        if all(count > 0 for count in served_by.values()):
            break
    assert all(count > 0 for count in served_by.values()), served_by
    return rounds, metrics, served_by


def test_cooldowns_and_quotas_hold_across_both_workers(tmp_path, emulator, shared_store):
    """One `--workers 2` server per store for both checks (a start is four processes' start-up):
    WEB's cascade is flaky → wiki (a cooldown set by one worker), ENCYCLOPEDIA's paid → free (a
    daily quota of 5 shared by both)."""
    emulator.add(BAD, Reply(status=502))
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora", "Aurora borealis")))
    # a slow paid provider, so the 20 concurrent searches overlap in both workers
    emulator.add(PAID, Reply.json(wikipedia_pages("Paid"), delay=0.2))
    emulator.add(FREE, Reply.json(wikipedia_pages("Free")))
    settings = {
        **endpoint("flaky", "wikipedia", f"{emulator.url}/bad", **FAST),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/w", **FAST),
        **endpoint("paid", "wikipedia", f"{emulator.url}/paid", **FAST, **{"quota.daily": 5}),
        **endpoint("free", "wikipedia", f"{emulator.url}/free", **FAST),
        "research.default.web": "flaky",
        "research.fallback.web": "wiki",
        "research.default.encyclopedia": "paid",
        "research.fallback.encyclopedia": "free",
    }
    config = _config(tmp_path, settings, shared_store)
    with served(config, tmp_path / "home", "--workers", "2") as server:
        assert server.token is not None
        _cooldown_is_honoured_by_the_other_worker(server, emulator)
        _quota_is_exact_across_both_workers(server, emulator)


def _cooldown_is_honoured_by_the_other_worker(server: Served, emulator: Any) -> None:
    assert server.token is not None
    [first] = asyncio.run(_searches(server.url, server.token, ["aurora 0"]))
    assert first["providerInstanceId"] == "wiki"
    assert _outcomes(first)[0] == ("flaky", "hard_error")
    assert len(emulator.requests(BAD)) == 1
    # more searches over fresh connections, in rounds of 8, until both workers have served some
    rounds, metrics, served_by = _until_both_workers_served(server, "aurora", 8)
    later = [result for round_ in rounds for result in round_]
    assert sum(served_by.values()) == 1 + len(later)
    # the provider was called once, by one worker; every later search, in either worker, skipped it
    assert len(emulator.requests(BAD)) == 1
    assert [r["providerInstanceId"] for r in later] == ["wiki"] * len(later)
    assert {tuple(_outcomes(r)) for r in later} == {(("flaky", "skipped_cooldown"), ("wiki", "success"))}
    flaky_calls = {
        pid: _metric(text, "zarniwoop_research_provider_calls_total", instance="flaky")
        for pid, text in metrics.items()
    }
    assert sorted(flaky_calls.values()) == [0.0, 1.0]  # one worker called it; the other never did
    assert set(metrics) == set(worker_pids(server.pid))


def _quota_is_exact_across_both_workers(server: Served, emulator: Any) -> None:
    rounds, metrics, _ = _until_both_workers_served(server, "q", 20, "encyclopedia")
    results = [result for round_ in rounds for result in round_]
    by_paid = [r for r in results if r["providerInstanceId"] == "paid"]
    by_free = [r for r in results if r["providerInstanceId"] == "free"]
    assert len(emulator.requests(PAID)) == 5
    assert len(by_paid) == 5
    assert [h["title"] for r in by_paid for h in r["hits"]] == ["Paid"] * 5
    assert len(by_free) == len(results) - 5
    assert {tuple(_outcomes(r)) for r in by_free} == {(("paid", "skipped_exhausted"), ("free", "success"))}
    paid_calls = [
        _metric(text, "zarniwoop_research_provider_calls_total", instance="paid") for text in metrics.values()
    ]
    assert sum(paid_calls) == 5.0


def test_one_banner_one_token_for_every_worker_and_sigterm_stops_them_all(tmp_path, emulator):
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora")))
    config = _config(tmp_path, endpoint("wiki", "wikipedia", f"{emulator.url}/w", **FAST))
    with served(config, tmp_path / "home", "--workers", "2") as server:
        workers = worker_pids(server.pid)
        assert len(workers) == 2
        assert "  Workers   2 processes share the port (docs/workers.md)" in server.banner.splitlines()
        # the printed token is honoured by both workers (/metrics is operator-only)
        assert set(_per_worker_metrics(server)) == set(workers)
        # fresh connections are spread over both workers (SO_REUSEPORT on Linux), not all taken by
        # whichever wins the accept race: 40 of them, each worker answering 8 or more (a fair coin
        # gives fewer than 8 of 40 about once in 10⁵ runs)
        answered: dict[int, int] = dict.fromkeys(workers, 0)
        for _ in range(40):
            with httpx.Client(base_url=server.url, timeout=60) as http:
                scrape = http.get("/metrics", headers={"Authorization": f"Bearer {server.token}"})
            answered[int(_metric(scrape.text, "zarniwoop_serve_worker_pid"))] += 1
        assert min(answered.values()) >= 8, answered
        with httpx.Client(base_url=server.url, timeout=60) as http:
            for _ in range(20):  # fresh connections: the workers take turns
                refused = http.get("/v1/research/providers", headers={"Connection": "close"})
                assert refused.status_code == 401
        assert server.token is not None
        results = asyncio.run(_searches(server.url, server.token, [f"aurora {i}" for i in range(12)]))
        assert [r["providerInstanceId"] for r in results] == ["wiki"] * 12
        # The workers share their port through SO_REUSEPORT, which would let another server's
        # SO_REUSEPORT sockets in too, splitting the connections silently: a second `serve` on that
        # port, with workers or without, is refused as on any port in use. (Checked on this server
        # rather than one of its own: a `--workers 2` start is 3 processes' start-up.)
        # In-process (support/cli.py): the kernel refuses this process's bind as another's.
        port = server.url.rsplit(":", 1)[1]
        with pytest.MonkeyPatch.context() as monkeypatch:
            never_serve(monkeypatch, bind=True)
            for extra in (("--workers", "2"), ()):
                second = run_cli(
                    *("--config", str(config), "serve", "--port", port, *extra), home=tmp_path / "second"
                )
                assert second.code == 2, second.stderr
                assert second.stderr.strip() == f"error: cannot bind 127.0.0.1:{port}: Address already in use"
        assert sorted(worker_pids(server.pid)) == sorted(workers)
        with httpx.Client(base_url=server.url, timeout=60) as http:
            assert http.get("/healthz").status_code == 200
        children = child_pids(server.pid)  # the workers, and the standby once it is up
        assert set(workers) <= set(children) and len(children) <= 3
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=60) == 0
        deadline = time.monotonic() + 60
        while not all(has_exited(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in children if not has_exited(pid)] == []
        # the stdout pump thread read to the end: it closes the pipe at EOF
        until(lambda: server.process.stdout.closed, "the server's stdout read to its end")
        text = "".join(server.output)
        assert text.count("serving on http://") == 1
        assert text.count("Press Ctrl+C to stop.") == 1
        assert text.count(str(server.token)) == 2  # the token line and the curl example, once each
        assert "zarniwoop-worker-ready" not in text
        assert str(server.token) not in (tmp_path / "home" / "serve.stderr").read_text()
    # a graceful stop: each worker flushed its audit spool into the database before it exited
    with sqlite3.connect(tmp_path / "home" / "zarniwoop.db") as db:
        rows = db.execute("SELECT instance_id, outcome FROM research_call_records").fetchall()
    assert sorted(rows) == [("wiki", "success")] * 12
    assert list((tmp_path / "home" / "spool").glob("*.jsonl")) == []


def test_workers_outlive_neither_a_killed_parent_nor_a_killed_worker_the_server(tmp_path, emulator):
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora")))
    config = _config(tmp_path, endpoint("wiki", "wikipedia", f"{emulator.url}/w", **FAST))
    with served(config, tmp_path / "home", "--workers", "2") as server:
        first, second = worker_pids(server.pid)
        # once both serve, the parent starts a standby: imported, waiting on its stdin, not serving
        assert wait_for_standby(server.pid)
        [standby] = set(child_pids(server.pid)) - {first, second}
        os.kill(first, signal.SIGKILL)  # a worker dies: the standby takes its place
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = worker_pids(server.pid)
            if len(now) == 2 and first not in now:
                break
            time.sleep(0.1)
        assert sorted(worker_pids(server.pid)) == sorted([second, standby])
        assert set(_per_worker_metrics(server)) == {second, standby}  # the former standby serves
        log = (tmp_path / "home" / "serve.stderr").read_text()
        assert re.search(
            rf"warning: worker \d \(pid {first}\) exited with code -9; its standby takes over", log
        )
        assert re.search(
            rf"worker \d \(pid {standby}\) accepts connections, [0-9.]+ s after pid {first}", log
        )
        assert wait_for_standby(server.pid)  # and another standby is made ready
        children = child_pids(server.pid)
        [fresh] = set(children) - {second, standby}
        assert fresh != first
        os.kill(server.pid, signal.SIGKILL)  # the parent dies: its children see stdin close and stop
        server.process.wait(timeout=60)
        deadline = time.monotonic() + 60
        while not all(has_exited(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [pid for pid in children if not has_exited(pid)] == []
        stop(server.process)


def test_listening_socket_makes_asyncio_set_tcp_nodelay_on_every_connection():
    """Even from a socket object whose protocol field is 0 (as `socket.socket(AF_INET)` makes,
    which asyncio would not set TCP_NODELAY for), every accepted connection gets it — so no small
    response of a `serve --workers` worker (each serves the socket `listening_socket` makes) waits
    ~40 ms for a delayed ACK. (Shown here by the option itself: a stopwatch on /healthz latency was
    what a busy machine broke.)"""
    bare = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    bare.bind(("127.0.0.1", 0))
    bare.listen()
    assert bare.proto == 0
    sock = listening_socket(os.dup(bare.fileno()))
    bare.close()
    assert sock.proto == socket.IPPROTO_TCP
    port = sock.getsockname()[1]
    flags: list[int] = []

    async def main() -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            flags.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handle, sock=sock)
        async with server:
            for _ in range(3):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
            await until_async(lambda: len(flags) == 3, "the three connections handled")

    asyncio.run(main())
    assert len(flags) == 3 and all(flags), flags


@pytest.mark.parametrize("value", ["0", "-2"])
def test_workers_must_be_at_least_one(tmp_path, value, monkeypatch):
    never_serve(monkeypatch)  # in-process (support/cli.py): refused before anything is bound
    config = _config(tmp_path, {})
    result = run_cli(
        "--config", str(config), "serve", "--port", "0", "--workers", value, home=tmp_path / "home"
    )
    assert result.code == 2
    assert result.stderr.strip() == f"error: --workers: expected a whole number of at least 1, got {value}"
    assert result.stdout == ""


def test_pacing_is_shared_by_both_workers(tmp_path, emulator):
    """`perSecond: 2, burst: 4` holds for the server, not per worker (emulator log)."""
    emulator.add(PAID, Reply.json(wikipedia_pages("Paced")))
    emulator.add(WIKI, Reply.json(wikipedia_pages("Free")))
    paced = {"rateLimit.perSecond": 2, "rateLimit.burst": 4}
    settings = {
        **endpoint("paced", "wikipedia", f"{emulator.url}/paid", **paced),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/w", **FAST),
    }
    config = _config(tmp_path, settings)
    with served(config, tmp_path / "home", "--workers", "2") as server:
        assert server.token is not None
        asked = time.monotonic()  # the emulator's clock; no search before this
        rounds, _, _ = _until_both_workers_served(server, "p", 16)
    results = [result for round_ in rounds for result in round_]
    times = sorted(r.at for r in emulator.requests(PAID))
    by_paced = [r for r in results if r["providerInstanceId"] == "paced"]
    assert len(times) == len(by_paced) >= 4
    # One pace for the server: 3 at once, then one per 0.525 s from the first search on, whichever
    # worker sent it (a lower bound by order; paced per worker, twice as many would come as soon).
    assert ahead_of_pace(times, asked, cell_of(2, 4).interval, at_once=3) == []

"""A replayed agent trace (issue 27): searches an agent makes, with repeats and identical bursts,
sent to one `serve` process, through `serve --workers 2`, or as one CLI process per search.

    trace = agent_trace(300)          # seeded: the same list every run
    floor(trace)                      # F: the distinct searches, the fewest upstream calls possible
    asyncio.run(replay_http(url, token, trace))
    replay_cli(config, home, trace)
    replay_runtimes(config, home, trace)  # the in-process twin of replay_cli

The shape follows the m6 trace the issue measured (300 searches, 162 upstream calls): 30 % of the
searches repeat an earlier one (issued after it finished: a cache hit when the cache is shared),
20 % arrive as bursts of 5 identical concurrent searches (one flight when coalescing is shared),
and the rest are new. With 300 searches that is 90 repeats, 12 bursts (60 searches) and 150 new
single searches: F = 150 + 12 = 162, −46 % of the naive 300.

Each search goes to the emulator's Wikipedia routes (`add_routes`), WEB to one endpoint and
ENCYCLOPEDIA to another, so a repeat must match the modality too; `settings` configures them.
Used by tests/surfaces/test_trace_replay.py and bench/trace_replay.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from .bodies import wikipedia_pages
from .cli import run_cli
from .emulator import Emulator, Reply
from .processes import starts_process
from .runtime import endpoint, only
from .served import serve_command, server_env

WEB = "/trace-web/w/rest.php/v1/search/page"
ENCYCLOPEDIA = "/trace-enc/w/rest.php/v1/search/page"
ROUTES = {"web": WEB, "encyclopedia": ENCYCLOPEDIA}

_TOPICS = (
    "aurora borealis", "solar wind", "magnetosphere", "ionosphere", "coronal mass ejection",
    "geomagnetic storm", "sunspot cycle", "van allen belt", "plasma physics", "auroral oval",
    "kp index", "substorm", "noctilucent clouds", "airglow", "heliosphere",
)  # fmt: skip
_ASPECTS = (
    "history", "forecast", "photography", "latitude", "colours", "measurement", "satellite data",
    "effects on power grids", "radio blackout", "myths", "best season", "spectrum", "research",
)  # fmt: skip


@dataclass(frozen=True)
class Step:
    """One step of the trace: `copies` identical searches issued at once (1: a single search)."""

    query: str
    modality: str
    copies: int = 1

    @property
    def key(self) -> tuple[str, str]:
        return (self.query, self.modality)


def agent_trace(
    searches: int = 300,
    *,
    repeat_share: float = 0.3,
    burst_share: float = 0.2,
    burst_size: int = 5,
    seed: int = 6,
) -> list[Step]:
    """`searches` searches in order: `repeat_share` of them repeat an earlier step's search (after
    it), `burst_share` come as bursts of `burst_size` identical concurrent searches, the rest are
    new single searches. Deterministic for a seed."""
    rng = random.Random(seed)
    repeats = round(searches * repeat_share)
    bursts = round(searches * burst_share / burst_size)
    singles = searches - repeats - bursts * burst_size
    if singles < 1:
        raise ValueError(f"searches: {searches} leave no new single search after repeats and bursts")
    fresh: list[Step] = []
    for i in range(singles + bursts):
        query = f"{rng.choice(_TOPICS)} {rng.choice(_ASPECTS)} {i}"
        modality = "encyclopedia" if rng.random() < 0.3 else "web"
        fresh.append(Step(query, modality, burst_size if i >= singles else 1))
    rng.shuffle(fresh)
    # each repeat goes after some fresh step and repeats one of the fresh steps before it
    slots = sorted(rng.randrange(1, len(fresh) + 1) for _ in range(repeats))
    trace: list[Step] = []
    position = 0
    for slot in slots:
        while position < slot:
            trace.append(fresh[position])
            position += 1
        original = rng.choice(fresh[:slot])
        trace.append(Step(original.query, original.modality))
    trace.extend(fresh[position:])
    assert sum(step.copies for step in trace) == searches
    return trace


def searches_in(trace: list[Step]) -> int:
    return sum(step.copies for step in trace)


def floor(trace: list[Step]) -> int:
    """F: the distinct searches of the trace — every other one can be a cache hit or a follower."""
    return len({step.key for step in trace})


def add_routes(emulator: Emulator, delay: float = 0.05) -> None:
    """Both modalities' routes; `delay` keeps a burst's searches in flight together."""
    emulator.add(WEB, Reply.json(wikipedia_pages("Aurora", "Solar wind"), delay=delay))
    emulator.add(ENCYCLOPEDIA, Reply.json(wikipedia_pages("Magnetosphere"), delay=delay))


def upstream_calls(emulator: Emulator) -> int:
    return sum(len(emulator.requests(path)) for path in ROUTES.values())


def settings(emulator_url: str) -> dict[str, Any]:
    """Two Wikipedia endpoints, one per modality, unpaced, with a cache that outlasts the replay."""
    fast = {"rateLimit.perSecond": 100_000}
    return {
        **only(),
        **endpoint("web", "wikipedia", f"{emulator_url}/trace-web", **fast),
        **endpoint("enc", "wikipedia", f"{emulator_url}/trace-enc", **fast),
        "research.default.web": "web",
        "research.default.encyclopedia": "enc",
        "research.cache.ttlSeconds": 3600,
    }


async def replay_http(url: str, token: str, trace: list[Step]) -> list[dict[str, Any]]:
    """Each step in order, each search on a fresh connection (so `--workers` spreads them); a
    burst's copies at once. Every answer must be a 200 with hits."""
    headers = {"Authorization": f"Bearer {token}", "Connection": "close"}
    fresh = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120, limits=fresh) as http:
        return await _replay_over([http], trace)


async def replay_apps(config: Path, home: Path, trace: list[Step], count: int) -> list[dict[str, Any]]:
    """The in-process twin of `serve` (`count` 1) and `serve --workers N` (`count` N): N apps, each
    on a runtime of its own on the one home, opened as `serve` and each worker open theirs
    (`surfaces/cli/workers.py`), sharing nothing but the home's files; the searches are dealt to
    them in turn, as the kernel deals fresh connections to workers."""
    from zarniwoop.runtime import Runtime
    from zarniwoop.surfaces.http import create_app
    from zarniwoop.tenancy.tokens import new_token

    token = new_token()
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for _ in range(count):
            workers = {"share_pacing": True, "processes": count} if count > 1 else {}
            runtime = await Runtime.open(config, home=home, **workers)
            stack.push_async_callback(runtime.aclose)
            app = create_app(runtime, admin_token=token)
            await stack.enter_async_context(app.router.lifespan_context(app))
            clients.append(
                await stack.enter_async_context(
                    httpx.AsyncClient(
                        transport=httpx.ASGITransport(app=app),
                        base_url="http://127.0.0.1",
                        headers={"Authorization": f"Bearer {token}"},
                    )
                )
            )
        return await _replay_over(clients, trace)


async def _replay_over(clients: list[httpx.AsyncClient], trace: list[Step]) -> list[dict[str, Any]]:
    turn = itertools.count()

    async def one(step: Step) -> dict[str, Any]:
        http = clients[next(turn) % len(clients)]
        response = await http.post(
            "/v1/research/search", json={"query": step.query, "modality": step.modality}
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        assert body["hits"], body
        return body

    answers: list[dict[str, Any]] = []
    for step in trace:
        answers += await asyncio.gather(*(one(step) for _ in range(step.copies)))
    return answers


@starts_process
def replay_cli(config: Path, home: Path, trace: list[Step], *, parallel: int = 1) -> list[dict[str, Any]]:
    """One `zarniwoop search … --json` process per search on one ZARNIWOOP_HOME, how agents call
    the CLI; a burst's copies as concurrent processes. `parallel` > 1 runs that many steps at a
    time (start order kept; a repeat may then overlap its original, which it joins as a follower)
    — the floor is the same, only the replay is quicker."""
    env = server_env(home)

    def start(step: Step) -> list[subprocess.Popen[str]]:
        args = ("--config", str(config), "search", step.query, "--modality", step.modality, "--json")
        return [
            subprocess.Popen(
                serve_command(*args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(step.copies)
        ]

    def finish(processes: list[subprocess.Popen[str]]) -> list[dict[str, Any]]:
        out = []
        for process in processes:
            stdout, stderr = process.communicate(timeout=180)
            assert process.returncode == 0, stderr
            body: dict[str, Any] = json.loads(stdout)
            assert body["hits"], body
            out.append(body)
        return out

    answers: list[dict[str, Any]] = []
    running: list[list[subprocess.Popen[str]]] = []
    for step in trace:
        if len(running) >= parallel:
            answers += finish(running.pop(0))
        running.append(start(step))
    for processes in running:
        answers += finish(processes)
    return answers


def replay_runtimes(config: Path, home: Path, trace: list[Step]) -> list[dict[str, Any]]:
    """The in-process twin of `replay_cli`: every search on a runtime of its own, opened on the one
    home and closed after it as a CLI process opens and closes one, sharing nothing but the home's
    files — a single search through the CLI's runner (`support/cli.py`), a burst's copies as
    runtimes searching at once (the runner swaps `sys.stdout`: it takes one call at a time)."""
    answers: list[dict[str, Any]] = []
    for step in trace:
        if step.copies == 1:
            args = ("--config", str(config), "search", step.query, "--modality", step.modality, "--json")
            ran = run_cli(*args, home=home)
            assert ran.code == 0, ran.stderr
            answers.append(json.loads(ran.stdout))
        else:
            answers += asyncio.run(_burst_of_runtimes(config, home, step))
    for body in answers:
        assert body["hits"], body
    return answers


async def _burst_of_runtimes(config: Path, home: Path, step: Step) -> list[dict[str, Any]]:
    from zarniwoop.contract.query import SearchRequest, SearchScope
    from zarniwoop.runtime import Runtime

    async def one() -> dict[str, Any]:  # what `zarniwoop search … --json` does, in the CLI's scope
        runtime = await Runtime.open(config, home=home)
        try:
            request = SearchRequest.create(query=step.query, modality=step.modality)
            result = await runtime.dispatcher.search(request, SearchScope("default", "default"))
        finally:
            await runtime.aclose()
        assert result.error_message is None, result.error_message
        body: dict[str, Any] = result.to_json()
        return body

    return list(await asyncio.gather(*(one() for _ in range(step.copies))))


MODES = ("serve", "workers2", "cli")
"""`serve` (one process), `serve --workers 2` (fresh connections), one CLI process per search."""
IN_PROCESS = {"app": "serve", "apps2": "workers2", "runtimes": "cli"}
"""The fast tier's twins of the MODES, in-process (`replay_apps`, `replay_runtimes`); not the bench's
modes: it measures processes."""


@starts_process  # `serve` or one CLI process per search
def replay(
    emulator: Emulator, directory: Path, trace: list[Step], mode: str, *, cli_parallel: int = 1
) -> int:
    """Replay `trace` in `mode` on a fresh home under `directory`; the upstream calls it made
    (the emulator's log of the trace routes, cleared first)."""
    from .runtime import write_config
    from .served import served

    if mode not in (*MODES, *IN_PROCESS):
        raise ValueError(f"mode: expected one of {', '.join((*MODES, *IN_PROCESS))}, got {mode!r}")
    work = directory / mode
    work.mkdir(parents=True)
    config = write_config(work, {"settings": settings(emulator.url)})
    home = work / "home"
    emulator.clear_log()
    if mode == "cli":
        answers = replay_cli(config, home, trace, parallel=cli_parallel)
    elif mode == "runtimes":
        answers = replay_runtimes(config, home, trace)
    elif mode in IN_PROCESS:
        answers = asyncio.run(replay_apps(config, home, trace, 2 if mode == "apps2" else 1))
    else:
        extra = ("--workers", "2") if mode == "workers2" else ()
        with served(config, home, *extra) as server:
            assert server.token is not None
            answers = asyncio.run(replay_http(server.url, server.token, trace))
    assert len(answers) == searches_in(trace)
    return upstream_calls(emulator)

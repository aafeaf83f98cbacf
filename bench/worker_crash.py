"""`kill -9` of one `serve --workers 2` worker under load, probed every 100 ms, on a quiet machine
and with two CPU hogs running (issue 27).

    python bench/worker_crash.py                 # quiet, then with `stress-ng --cpu 2` (or 2 busy loops)
    python bench/worker_crash.py --rounds 3 --no-quiet

Each round starts `zarniwoop serve --workers 2` against the loopback emulator (its own process):
a paid endpoint (`quota.daily` 60, 0.3 s per answer) serves ENCYCLOPEDIA with a free fallback, a
free one serves WEB. Six clients keep ENCYCLOPEDIA searches in flight; a probe — a WEB search on a
fresh connection — starts every 100 ms. The load starts once the parent's standby worker is warm
(blocked reading its stdin), and 1.5 s into it one worker is killed (SIGKILL). The round runs
on until the parent says its replacement accepts connections and the quota is spent, then 2 s more;
then SIGTERM, and the database is read.

Prints one JSON object per round set: for each round, the probes that failed (in flight on the
killed worker, or sent after the kill), `maxSilenceSeconds` — the longest time after the kill with
no probe answered (from the kill, or from an answer, to the next answer) — the replacement time the
parent logged, and the audit: `interrupted` rows against the clients' lost requests, the paid
endpoint's audit rows against its quota counter (equal, and at most the limit) and its upstream
calls, audit rows against every upstream call the emulator saw (at least as many: a call audited
as started may die before its request left, or time out unsent on a starved machine). Exits 1 if a
silence exceeds 1 s or an audit figure is off.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.support.runtime import endpoint, only, write_config  # noqa: E402
from tests.support.served import served, standby_waiting, worker_pids  # noqa: E402

QUOTA = 60
PAID = "/paid/w/rest.php/v1/search/page"
FREE = "/free/w/rest.php/v1/search/page"
_REPLACED = re.compile(r"accepts connections, ([0-9.]+) s after pid (\d+) exited")


def _run_emulator(conn: Connection) -> None:
    from tests.support.bodies import wikipedia_pages
    from tests.support.emulator import Emulator, Reply

    emulator = Emulator().start()
    emulator.add(PAID, Reply.json(wikipedia_pages("Paid"), delay=0.3))
    emulator.add(FREE, Reply.json(wikipedia_pages("Free")))
    conn.send(emulator.url)
    while (message := conn.recv()) != "stop":
        if message == "count":
            conn.send({"paid": len(emulator.requests(PAID)), "free": len(emulator.requests(FREE))})
        elif message == "clear":
            emulator.clear_log()
            conn.send("ok")
    emulator.stop()


def _ask(conn: Connection, message: str) -> Any:
    conn.send(message)
    return conn.recv()


def _hogs() -> list[subprocess.Popen[bytes]]:
    if shutil.which("stress-ng"):
        command = ["stress-ng", "--cpu", "2", "--quiet"]
        return [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    busy = [sys.executable, "-c", "while True: pass"]
    return [subprocess.Popen(busy) for _ in range(2)]


def _stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    for hog in hogs:
        hog.send_signal(signal.SIGINT)
    for hog in hogs:
        try:
            hog.wait(timeout=10)
        except subprocess.TimeoutExpired:
            hog.kill()
            hog.wait()


async def _round(url: str, token: str, log: Path, server_pid: int) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}", "Connection": "close"}
    probes: list[tuple[float, float, bool]] = []  # (sent, done, answered)
    load: dict[str, int] = {"answered": 0, "lost": 0}
    stop = asyncio.Event()

    # one client, no keep-alive: each search on a fresh connection (a client per search would spend
    # more CPU making SSL contexts than the server spends answering)
    fresh = httpx.Limits(max_connections=64, max_keepalive_connections=0)
    http = httpx.AsyncClient(base_url=url, headers=headers, timeout=10, limits=fresh)

    async def search(query: str, modality: str) -> bool:
        try:
            response = await http.post("/v1/research/search", json={"query": query, "modality": modality})
            return response.status_code == 200 and bool(response.json()["hits"])
        except httpx.HTTPError:
            return False

    async def probe(i: int) -> None:
        sent = time.monotonic()
        ok = await search(f"probe {i}", "web")
        probes.append((sent, time.monotonic(), ok))

    async def client(c: int) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            load["answered" if await search(f"load {c} {i}", "encyclopedia") else "lost"] += 1

    clients: list[asyncio.Task[None]] = []
    loaded_at = 0.0
    probe_tasks: list[asyncio.Task[None]] = []
    start = time.monotonic()
    killed_at = 0.0
    killed = 0
    replaced: tuple[float, int] | None = None
    replaced_seen = 0.0
    standby_at: float | None = None
    tick = 0
    while True:
        target = start + tick * 0.1
        await asyncio.sleep(max(0.0, target - time.monotonic()))
        probe_tasks.append(asyncio.create_task(probe(tick)))
        tick += 1
        now = time.monotonic()
        if standby_at is None and standby_waiting(server_pid):
            standby_at = now - start
        if not clients and (standby_at is not None or now - start > 60):
            # the paid calls start once the standby is warm, so the kill finds some in flight
            clients = [asyncio.create_task(client(c)) for c in range(6)]
            loaded_at = now
        if not killed and clients and now - loaded_at >= 1.5:
            killed = worker_pids(server_pid)[0]
            os.kill(killed, signal.SIGKILL)
            killed_at = time.monotonic()
        if killed and replaced is None and (m := _REPLACED.search(log.read_text())):
            replaced = (float(m.group(1)), int(m.group(2)))
            replaced_seen = now
        if replaced is not None and now - replaced_seen >= 2.0 and now - loaded_at >= 6.0:
            break
        if now - start > 120:
            break
    stop.set()
    await asyncio.gather(*clients, *probe_tasks)
    await http.aclose()
    after = sorted((p for p in probes if p[1] >= killed_at), key=lambda p: p[1])
    answers = [killed_at] + [done for _, done, ok in after if ok]
    gaps = [(b - a, a - killed_at) for a, b in itertools.pairwise(answers)]
    silence, silence_from = max(gaps) if gaps else (None, None)
    before = sorted(done - sent for sent, done, ok in probes if ok and done < killed_at)
    return {
        "probes": len(probes),
        "probesFailed": sum(1 for p in probes if not p[2]),
        "probesFailedSentAfterKill": sum(1 for sent, _, ok in probes if not ok and sent >= killed_at),
        "maxSilenceSeconds": None if silence is None else round(silence, 3),
        "silenceStartsAfterKillSeconds": None if silence_from is None else round(silence_from, 3),
        "probeMedianBeforeKillSeconds": round(before[len(before) // 2], 3) if before else None,
        "probeMaxBeforeKillSeconds": round(before[-1], 3) if before else None,
        "standbyWarmAfterSeconds": None if standby_at is None else round(standby_at, 2),
        "killedAfterSeconds": round(killed_at - start, 2),
        "replacementSeconds": None if replaced is None else replaced[0],
        "replacedPidMatches": replaced is not None and replaced[1] == killed,
        "loadAnswered": load["answered"],
        "loadLost": load["lost"],
    }


def _audit(home: Path) -> dict[str, Any]:
    with sqlite3.connect(home / "zarniwoop.db") as db:
        rows = db.execute("SELECT instance_id, outcome FROM research_call_records").fetchall()
        used = db.execute(
            "SELECT COALESCE(SUM(used), 0) FROM quota_counters WHERE instance_id = 'paid'"
        ).fetchone()[0]
    outcomes: dict[str, int] = {}
    for instance, outcome in rows:
        outcomes[f"{instance}:{outcome}"] = outcomes.get(f"{instance}:{outcome}", 0) + 1
    return {"rows": len(rows), "outcomes": outcomes, "paidQuotaUsed": used}


def _one(emulator: Connection, url: str, hogged: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="zw-crash-") as tmp:
        directory = Path(tmp)
        settings = {
            **only(),
            **endpoint(
                "paid", "wikipedia", f"{url}/paid", **{"quota.daily": QUOTA, "rateLimit.perSecond": 100_000}
            ),
            **endpoint("free", "wikipedia", f"{url}/free", **{"rateLimit.perSecond": 100_000}),
            "research.default.web": "free",
            "research.default.encyclopedia": "paid",
            "research.fallback.encyclopedia": "free",
            "research.cache.ttlSeconds": 0,
        }
        config = write_config(directory, {"settings": settings})
        home = directory / "home"
        _ask(emulator, "clear")
        hogs = _hogs() if hogged else []
        try:
            with served(config, home, "--workers", "2") as server:
                assert server.token is not None
                out = asyncio.run(_round(server.url, server.token, home / "serve.stderr", server.pid))
                server.process.send_signal(signal.SIGTERM)
                out["serverExit"] = server.process.wait(timeout=60)
        finally:
            _stop_hogs(hogs)
        counts = _ask(emulator, "count")
        audit = _audit(home)
    interrupted = sum(n for key, n in audit["outcomes"].items() if key.endswith(":interrupted"))
    paid_rows = sum(n for key, n in audit["outcomes"].items() if key.startswith("paid:"))
    out.update(
        {
            "interruptedRows": interrupted,
            "upstreamCalls": counts["paid"] + counts["free"],
            "auditRows": audit["rows"],
            "paidUpstreamCalls": counts["paid"],
            "paidQuotaUsed": audit["paidQuotaUsed"],
            "paidQuota": QUOTA,
            "outcomes": audit["outcomes"],
        }
    )
    out["ok"] = bool(
        out["maxSilenceSeconds"] is not None
        and out["maxSilenceSeconds"] <= 1.0
        and out["replacedPidMatches"]
        and out["auditRows"] >= out["upstreamCalls"]  # every call the provider saw has its row
        and paid_rows == out["paidQuotaUsed"] <= QUOTA  # one reservation per attempt, never more
        and out["paidUpstreamCalls"] <= out["paidQuotaUsed"]
        and interrupted <= out["loadLost"] + out["probesFailed"]
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1, help="rounds per condition")
    parser.add_argument("--no-quiet", action="store_true", help="only the round(s) with CPU hogs")
    parser.add_argument("--no-hogs", action="store_true", help="only the quiet round(s)")
    args = parser.parse_args()
    parent, child = multiprocessing.Pipe()
    emulator = multiprocessing.Process(target=_run_emulator, args=(child,), daemon=True)
    emulator.start()
    url = parent.recv()
    conditions = [
        c
        for c in ("quiet", "hogs")
        if not (c == "quiet" and args.no_quiet) and not (c == "hogs" and args.no_hogs)
    ]
    out: dict[str, Any] = {"loadAverage": os.getloadavg()[0]}
    try:
        for condition in conditions:
            out[condition] = [_one(parent, url, condition == "hogs") for _ in range(args.rounds)]
    finally:
        parent.send("stop")
        emulator.join(timeout=10)
    out["ok"] = all(r["ok"] for c in conditions for r in out[c])
    print(json.dumps(out, indent=2))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

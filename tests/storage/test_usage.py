"""The audit log (seed §11): a row per provider call, no plaintext query, nothing lost to a crash or
an outage. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zarniwoop.contract import Outcome, SearchRequest, SearchScope
from zarniwoop.contract.results import Attempt
from zarniwoop.dispatch.pacing_share import DEADLINE_MARGIN
from zarniwoop.ledger import CallRecord
from zarniwoop.runtime import Runtime, retention_rules
from zarniwoop.storage.privacy import query_hash, redact_query
from zarniwoop.storage.retention import prune
from zarniwoop.storage.spool import Spool, read_segment

from ..support.bodies import openalex_works
from ..support.emulator import Reply
from ..support.runtime import cascade, endpoint, open_runtime, write_config
from ..support.tcp_proxy import proxied_postgres
from ..support.waiting import until_async

pytestmark = pytest.mark.anyio
SCOPE = SearchScope()
REPO = Path(__file__).resolve().parents[2]
SECRET = "zebra-plaintext-marker"
"""Every query in these tests contains it; it must never appear in any stored byte."""

COLUMNS = (
    "tenant, project, instance_id, protocol, modality, tier, query_hash, hit_count, ok, outcome, "
    "error_message, started_at, duration_ms"
)


def two_endpoints(emulator):
    """oa-empty answers with no hits (a call, no cooldown), then oa-ok answers: two calls per search."""
    return cascade(
        "academic",
        endpoint("oa-empty", "openalex", f"{emulator.url}/empty", rateLimit__perSecond=1000),
        endpoint("oa-ok", "openalex", f"{emulator.url}/ok", rateLimit__perSecond=1000),
    )


def serve(emulator, delay=0.0):
    emulator.add("/empty/works", Reply.json(openalex_works(0), delay=delay))
    emulator.add("/ok/works", Reply.json(openalex_works(3), delay=delay))


async def records(db):
    return await db.fetchall(f"SELECT {COLUMNS} FROM research_call_records ORDER BY started_at, instance_id")


async def test_one_row_per_provider_call_with_the_seed_fields(tmp_path, emulator, database_url):
    # 5 ms a call: rows are read in `started_at` order (milliseconds), and sub-millisecond loopback
    # calls in a row could share one (then the instance name would order them)
    serve(emulator, delay=0.005)
    emulator.add("/cool/works", Reply(status=503, delay=0.005))
    settings = {
        **two_endpoints(emulator),
        **endpoint("oa-cool", "openalex", f"{emulator.url}/cool"),
        "research.fallback.academic": "oa-cool,oa-ok",
    }
    query = f"{SECRET} crispr"
    async with await open_runtime(tmp_path, settings, database_url=database_url) as rt:
        begin = time.time()
        first = await rt.dispatcher.search(SearchRequest.create(query, "academic"), SCOPE)
        second = await rt.dispatcher.search(SearchRequest.create(query + " again", "academic"), SCOPE)
        assert [a.outcome for a in second.attempts if a.provider_instance_id == "oa-cool"] == [
            Outcome.SKIPPED_COOLDOWN
        ]
        assert first.provider_instance_id == second.provider_instance_id == "oa-ok"
        await rt.usage.flush()
        rows = await records(rt.db)
    # 3 calls for the first search, 2 for the second: the cooldown skip is not a call.
    assert [(r[2], r[9]) for r in rows] == [
        ("oa-empty", "empty"),
        ("oa-cool", "hard_error"),
        ("oa-ok", "success"),
        ("oa-empty", "empty"),
        ("oa-ok", "success"),
    ]
    tenant, project, instance, protocol, modality, tier, qhash, hits, ok, _outcome, error, started, ms = rows[
        2
    ]
    assert (tenant, project, instance, protocol, modality, tier) == (
        "default",
        "default",
        "oa-ok",
        "openalex",
        "ACADEMIC",
        "NORMAL",
    )
    assert qhash == query_hash(query) and len(qhash) == 64
    assert (hits, bool(ok), error) == (3, True, None)
    # within this test's own span (no fixed bound: a busy machine stretches the call and the span alike)
    assert begin - 1 <= started <= time.time() and 0 <= ms <= (time.time() - begin) * 1000
    assert (bool(rows[1][8]), rows[1][10]) == (False, "HTTP 503")
    assert rows[3][6] == query_hash(query + " again")


def test_redaction_and_hash():
    query = "crispr off-target"
    assert query_hash(query) == hashlib.sha256(b"crispr off-target").hexdigest()
    assert (
        redact_query("No results for 'CRISPR off-target' (q=crispr+off-target, u=crispr%20off-target)", query)
        == "No results for '<query>' (q=<query>, u=<query>)"
    )
    assert redact_query(None, query) is None
    assert len(redact_query("x" * 1000, query)) == 300


async def test_error_messages_are_stored_without_the_query(tmp_path, database_url):
    """A provider that echoes the query in its error: the row keeps the error, not the query."""
    async with await open_runtime(tmp_path, {}, database_url=database_url) as rt:
        instance = (await rt.factory.providers(SCOPE)).instances["wikipedia"]
        request = SearchRequest.create(f"{SECRET} query", "encyclopedia")
        attempt = Attempt("wikipedia", Outcome.SOFT_ERROR, f"invalid search '{SECRET} query'", 12)
        rt.usage.on_attempt(SCOPE, instance, request, attempt, 0)
        await rt.usage.flush()
        [row] = await records(rt.db)
    assert row[10] == "invalid search '<query>'"


async def test_retention_per_scope(tmp_path, database_url):
    settings = {"research.log.retentionDays": 30}
    tenants = {"tenants": {"acme": {"projects": {"brief": {"settings": {"research.log.retentionDays": 1}}}}}}
    async with await open_runtime(tmp_path, settings, database_url=database_url, **tenants) as rt:
        now = time.time()

        def record(i, scope, age_days):
            return CallRecord(
                f"r{i}", scope.tenant, scope.project, "x", "openalex", "WEB", "NORMAL", "h", 0, True, "empty", None,
                now - age_days * 86400, 5,
            )  # fmt: skip

        brief, default = SearchScope("acme", "brief"), SearchScope()
        await rt.usage.write(
            [record(1, brief, 2), record(2, brief, 0.5), record(3, default, 2), record(4, default, 31)]
        )
        removed = await prune(rt.db, retention_rules(rt.settings), now=now)
        assert removed["research_call_records"] == 2
        kept = await rt.db.fetchall("SELECT id FROM research_call_records ORDER BY id")
    assert [r[0] for r in kept] == ["r2", "r3"]


def test_spool_owners_and_orphans(tmp_path):
    alive = Spool(tmp_path)
    alive.append({"id": "a"})
    alive.seal()
    other = Spool(tmp_path)
    assert list(other.claim_orphans()) == []  # the owner holds its lock: not an orphan
    alive.append({"id": "b"})
    alive.close()  # left with unwritten segments: the next process replays them
    [claim] = list(other.claim_orphans())
    assert [r["id"] for s in claim.segments for r in read_segment(s)] == ["a", "b"]
    for segment in claim.segments:
        segment.unlink()
    claim.release()
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{other.owner}.lock"]
    other.close()
    assert list(tmp_path.iterdir()) == []


def test_a_starting_owner_is_never_taken_for_a_dead_one(tmp_path, monkeypatch):
    """Another process's flush claims orphans at any moment, also while an owner starts: it must not
    find the new owner's lock file unlocked (it would take the lock, and the owner's start fail, or
    unlink it, and the owner's segments be replayed and deleted under it)."""
    flusher = Spool(tmp_path)
    real_flock = fcntl.flock
    claimed: list[list[str]] = []

    def flush_meanwhile(fd, operation):  # the flusher runs just before the owner's flock
        monkeypatch.setattr(fcntl, "flock", real_flock)
        claimed.append([c.lock_path.name for c in flusher.claim_orphans()])
        return real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flush_meanwhile)
    owner = Spool(tmp_path)
    owner.append({"id": "a"})
    owner.seal()
    assert claimed == [[]]  # the flusher ran once, in between, and found no dead owner
    assert list(flusher.claim_orphans()) == []  # alive and locked under its own name
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".lock") == sorted(
        [f"{owner.owner}.lock", f"{flusher.owner}.lock"]
    )
    owner.close()
    flusher.close()


# -- kill -9 mid-burst ---------------------------------------------------------------------------


def _dump_table(database_url: str | None, home: Path) -> bytes:
    if database_url is None:
        conn = sqlite3.connect(home / "zarniwoop.db")
        try:
            return "\n".join(line for line in conn.iterdump() if "research_call_records" in line).encode()
        finally:
            conn.close()
    base, schema = database_url.rsplit("?schema=", 1)
    if shutil.which("pg_dump"):
        return subprocess.run(
            ["pg_dump", "--data-only", "--table", f'"{schema}".research_call_records', base],
            check=True,
            capture_output=True,
            timeout=60,
        ).stdout

    async def copy() -> bytes:
        import asyncpg

        conn = await asyncpg.connect(base)
        try:
            rows = await conn.fetch(f'SELECT * FROM "{schema}".research_call_records')
            return repr([tuple(r) for r in rows]).encode()
        finally:
            await conn.close()

    return asyncio.run(copy())


def _stored_bytes(home: Path) -> bytes:
    """Every byte under ZARNIWOOP_HOME: the SQLite file, its WAL, the spool."""
    return b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())


def _burst(tmp_path: Path, settings: dict, database_url: str | None, *, count: int, concurrency: int):
    """`tests/support/burst.py` in a child process over `tmp_path/home`: searches `count` times (0:
    until killed), `concurrency` at once, printing each completed search as a JSON line; with its config."""
    body = {"settings": settings, **({"database_url": database_url} if database_url else {})}
    config = write_config(tmp_path, body)
    home = tmp_path / "home"
    env = {**os.environ, "ZARNIWOOP_HOME": str(home), "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.support.burst", str(config), str(home), "--count", str(count),
         "--concurrency", str(concurrency), "--prefix", SECRET],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    return child, config


def _reap(child) -> str:
    """Kill `child` (if still alive) and return what it wrote to stderr."""
    child.kill()
    child.wait(timeout=60)
    stderr = child.stderr.read().decode()
    child.stdout.close()
    child.stderr.close()
    return stderr


async def test_kill_9_mid_burst_loses_no_record_of_a_completed_call(tmp_path, emulator, database_url):
    serve(emulator, delay=0.005)
    home = tmp_path / "home"
    child, config = _burst(tmp_path, two_endpoints(emulator), database_url, count=0, concurrency=6)
    completed = []
    try:
        deadline = time.monotonic() + 60
        while len(completed) < 60 and time.monotonic() < deadline:
            line = await asyncio.to_thread(child.stdout.readline)
            if not line:
                break
            completed.append(json.loads(line))
        child.send_signal(signal.SIGKILL)  # mid-burst: six searches are in flight
    finally:
        stderr = _reap(child)
    assert child.returncode == -signal.SIGKILL
    assert len(completed) >= 60, stderr
    expected = {
        (query_hash(c["query"]), a[0])
        for c in completed
        for a in c["attempts"]
        if not a[1].startswith("skip")
    }
    assert len(expected) == 2 * len(completed)

    left = sum(len(read_segment(p)) for p in (home / "spool").glob("*.jsonl"))
    print(f"{len(completed)} searches completed, {left} records spooled but not yet written at the kill")
    # The next process on this home replays the dead one's spool.
    async with await Runtime.open(config, home=home) as rt:
        await rt.usage.flush()
        rows = await rt.db.fetchall("SELECT query_hash, instance_id FROM research_call_records")
    stored = {(r[0], r[1]) for r in rows}
    assert expected <= stored, f"{len(expected - stored)} completed calls have no audit record"
    assert len(rows) == len(stored)  # the replay wrote nothing twice
    # At most the six calls in flight at the kill (`interrupted` rows) may not have reached the emulator yet.
    assert len(rows) <= len(emulator.requests()) + 6
    assert not list((home / "spool").glob("*.jsonl"))  # all replayed

    everything = _stored_bytes(home) + _dump_table(database_url, home)
    assert SECRET.encode() not in everything
    assert query_hash(completed[0]["query"]).encode() in _dump_table(database_url, home)


# -- the database becoming unreachable -----------------------------------------------------------


async def test_database_outage_spools_logs_once_and_catches_up(tmp_path, emulator, postgres_url, caplog):
    serve(emulator)
    proxy, proxied = proxied_postgres(postgres_url)
    caplog.set_level(logging.INFO, logger="zarniwoop")
    try:
        async with await open_runtime(tmp_path, two_endpoints(emulator), database_url=proxied) as rt:
            rt.usage.linger = 0.005
            before = await rt.dispatcher.search(SearchRequest.create(f"{SECRET} 0", "academic"), SCOPE)
            assert before.hits
            await rt.usage.flush()

            proxy.stop()  # the database is gone: refused, and every open connection reset
            for i in range(1, 11):
                result = await rt.dispatcher.search(SearchRequest.create(f"{SECRET} {i}", "academic"), SCOPE)
                assert [h.title for h in result.hits] == ["Work 1", "Work 2", "Work 3"]
                assert result.error_message is None
            # the flusher tries, fails and backs off (0.5 s, then 1 s): wait for its second failure
            await until_async(lambda: rt.usage.outage.failures >= 2, "two failed flushes")
            assert rt.usage.spooled() == 20  # nothing dropped: 10 searches × 2 calls, on disk

            proxy.start()  # back, on the same port
            # the flusher's next try after its backoff (a few seconds here) writes them all
            await until_async(lambda: rt.usage.spooled() == 0, "the spool written after the outage")
            count = await rt.db.fetchone("SELECT COUNT(*) FROM research_call_records")
            assert count[0] == 22
    finally:
        proxy.stop()
    audit = [r for r in caplog.records if r.name == "zarniwoop.ledger.audit"]
    errors = [r for r in audit if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert "audit database unavailable" in errors[0].getMessage()
    assert "retried" in errors[0].getMessage()
    assert any("available again" in r.getMessage() for r in audit if r.levelno == logging.WARNING)
    assert SECRET not in caplog.text


async def test_a_wiped_spool_directory_is_recreated_and_nothing_is_lost(tmp_path, emulator):
    serve(emulator)
    async with await open_runtime(tmp_path, two_endpoints(emulator)) as rt:
        await rt.dispatcher.search(SearchRequest.create("one", "academic"), SCOPE)
        await rt.usage.flush()
        shutil.rmtree(rt.usage.spool.directory)  # an over-eager cleanup job
        appended = rt.usage.spool.appended
        await rt.dispatcher.search(SearchRequest.create("two", "academic"), SCOPE)
        # both calls went to disk (a "started" line and a record each), in the recreated directory,
        # not to memory. Counted as they were appended: the background flusher, woken by them, may
        # have written them already, so what is still pending (`spooled()`) is 2, 1 or 0 by now. A
        # flush while a call is in flight carries its "started" line into a new segment: one more
        # append each time (on a busy machine), so at least four; the rows below are counted exactly
        assert rt.usage.spool.appended >= appended + 4 and rt.usage.spool.directory.is_dir()
        await rt.usage.flush()
        rows = await rt.db.fetchall("SELECT query_hash FROM research_call_records")
    assert sorted(r[0] for r in rows) == sorted([query_hash("one")] * 2 + [query_hash("two")] * 2)


async def test_records_the_spool_cannot_take_are_kept_in_memory(tmp_path, emulator, caplog):
    serve(emulator)
    async with await open_runtime(tmp_path, two_endpoints(emulator)) as rt:
        rt.usage.linger = 60  # the background flusher stays out of the way until flush() below
        spool = rt.usage.spool
        spool.seal()
        # The next segment cannot be created: its name is taken by a directory (EISDIR, like a full disk).
        (spool.directory / f"{spool.owner}.{spool._seq:08d}.jsonl").mkdir()
        for i in range(3):
            result = await rt.dispatcher.search(SearchRequest.create(f"{SECRET} {i}", "academic"), SCOPE)
            assert result.hits
        assert rt.usage.spooled() == 6
        (spool.directory / f"{spool.owner}.{spool._seq:08d}.jsonl").rmdir()
        await rt.usage.flush()
        assert (await rt.db.fetchone("SELECT COUNT(*) FROM research_call_records"))[0] == 6
    errors = [r for r in caplog.records if r.levelname == "ERROR" and r.name == "zarniwoop.ledger.audit"]
    assert len(errors) == 1 and "kept in memory" in errors[0].getMessage()


async def test_a_call_cut_by_the_deadline_is_audited_as_a_timeout(tmp_path, emulator):
    emulator.add("/hang/works", Reply(hang=True))
    settings = {
        **cascade("academic", endpoint("oa-hang", "openalex", f"{emulator.url}/hang", timeoutMs=30000)),
        "research.deadlineMs": 300,
    }
    async with await open_runtime(tmp_path, settings) as rt:
        asked_at = time.time()
        result = await rt.dispatcher.search(SearchRequest.create("slow", "academic"), SCOPE)
        answered_at = time.time()
        assert [(a.provider_instance_id, a.outcome) for a in result.attempts] == [
            ("oa-hang", Outcome.TIMEOUT)
        ]
        await rt.usage.flush()
        rows = await records(rt.db)
    assert [(r[2], r[9], bool(r[8]), r[10]) for r in rows] == [
        ("oa-hang", "timeout", False, "deadline reached")
    ]
    # the call ran until its own timeout just before the deadline (300 ms after the search was
    # asked), however late it started; 5 ms for the row's rounding (to the millisecond)
    started_at, duration_ms = rows[0][11], rows[0][12]
    assert started_at + duration_ms / 1000 >= asked_at + 0.300 - DEADLINE_MARGIN - 0.005
    # and the row lies within the search as this test saw it (not the endpoint's 30 s timeout)
    assert asked_at - 0.005 <= started_at <= started_at + duration_ms / 1000 <= answered_at + 0.005


# -- calls in flight at a crash ------------------------------------------------------------------


async def test_calls_in_flight_at_kill_9_become_interrupted_rows(tmp_path, emulator, database_url):
    """Issue 11 item 8: every request that reached the provider has a row, even if the process died
    before the answer — the spooled "started" line is replayed as outcome `interrupted`."""
    emulator.add("/empty/works", Reply.json(openalex_works(0)))
    emulator.add("/ok/works", Reply(hang=True))  # every second call is in flight until the kill
    home = tmp_path / "home"
    settings = {
        **two_endpoints(emulator),
        "research.endpoint.oa-ok.timeoutMs": 60000,
        "research.deadlineMs": 60000,
    }
    child, config = _burst(tmp_path, settings, database_url, count=5, concurrency=5)
    try:
        deadline = time.monotonic() + 60
        while len(emulator.requests("/ok/works")) < 5 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        # The child's flusher runs meanwhile: in-flight "started" lines must survive it. Its run is
        # seen on disk: a flush deletes the segments it read (the started lines carried into a new
        # one), so once none of those holding the five lines now is left, a flush has read them.
        spool = home / "spool"
        holding = set(spool.glob("*.jsonl"))
        assert holding
        await until_async(lambda: not holding & set(spool.glob("*.jsonl")), "a flush in the child")
        child.send_signal(signal.SIGKILL)
    finally:
        stderr = _reap(child)
    assert child.returncode == -signal.SIGKILL
    assert len(emulator.requests("/ok/works")) == 5, stderr
    async with await Runtime.open(config, home=home) as rt:
        await rt.usage.flush()
        rows = await rt.db.fetchall(
            "SELECT instance_id, outcome, ok, hit_count, error_message FROM research_call_records"
        )
    assert sorted((r[0], r[1], bool(r[2]), r[3]) for r in rows) == sorted(
        [("oa-empty", "empty", True, 0)] * 5 + [("oa-ok", "interrupted", False, 0)] * 5
    )
    assert {r[4] for r in rows if r[1] == "interrupted"} == {"the process ended while the call was in flight"}
    assert not list((home / "spool").glob("*.jsonl"))
    assert SECRET.encode() not in _stored_bytes(home) + _dump_table(database_url, home)


async def test_a_live_process_keeps_started_lines_until_the_call_ends(tmp_path, emulator):
    """A flush while a call is in flight neither writes a row for it nor loses its "started" line."""
    emulator.add("/empty/works", Reply.json(openalex_works(0)))
    emulator.add("/ok/works", Reply.json(openalex_works(3), delay=0.6))
    async with await open_runtime(tmp_path, two_endpoints(emulator)) as rt:
        rt.usage.linger = 60  # only the explicit flushes below
        search = asyncio.ensure_future(
            rt.dispatcher.search(SearchRequest.create("slow one", "academic"), SCOPE)
        )
        while not emulator.requests("/ok/works"):
            await asyncio.sleep(0.01)
        await rt.usage.flush()
        assert [r[0] for r in await rt.db.fetchall("SELECT outcome FROM research_call_records")] == ["empty"]
        pending = [line for p in rt.usage.spool.pending_segments() for line in read_segment(p)]
        assert [(line["event"], line["instanceId"]) for line in pending] == [("started", "oa-ok")]
        assert (await search).hits
        await rt.usage.flush()
        rows = await rt.db.fetchall(
            "SELECT instance_id, outcome FROM research_call_records ORDER BY instance_id"
        )
    assert rows == [("oa-empty", "empty"), ("oa-ok", "success")]
    assert not list(rt.usage.spool.directory.glob("*.jsonl"))


async def test_an_llm_usage_record_the_database_cannot_take_is_spooled_and_written_once(
    tmp_path, database_url
):
    """One spool for both ledgers: an LLM usage row that meets a database failure (here its table is
    briefly gone) goes to the audit spool, and the flusher inserts it, once, when it is back."""
    from zarniwoop.ledger import UsageRecord

    record = UsageRecord(
        "acme", "mike", "p", None, "openai", "openai", "gpt-4o", "light", 1200, 345, 0.0042, "tenant", 812,
        id="usage_outage",
    )  # fmt: skip
    async with await open_runtime(tmp_path, {}, database_url=database_url) as rt:
        store = (await rt.llm()).usage
        await rt.db.execute("ALTER TABLE llm_usage_records RENAME TO llm_usage_away")
        try:
            await store.record(record)  # the call that made this record is not failed by its ledger
            assert rt.usage.spooled() == 1
            with pytest.raises(Exception):  # noqa: B017 - whatever the backend raises for a missing table
                await rt.usage.flush(orphans=False)
            assert rt.usage.spooled() == 1  # still spooled, not lost
        finally:
            await rt.db.execute("ALTER TABLE llm_usage_away RENAME TO llm_usage_records")
        # the runtime's background flusher may write it first: either way it is written once (below)
        await rt.usage.flush(orphans=False)
        assert rt.usage.spooled() == 0
        await store.record(record)  # the same id again (a replay after a write): not a second row
        assert rt.usage.spooled() == 0
        rows = await rt.db.fetchall(
            "SELECT id, tokens_input, tokens_output, cost_usd, duration_ms FROM llm_usage_records"
        )
    assert [tuple(r) for r in rows] == [("usage_outage", 1200, 345, 0.0042, 812)]

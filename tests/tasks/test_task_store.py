"""The task table (issue 45) on SQLite and PostgreSQL: binding to the caller, cancellation, leases
and their takeover, sealed contents, and the retention job deleting expired tasks with their steps."""

from __future__ import annotations

import re

import pytest

from zarniwoop.runtime import retention_rules
from zarniwoop.storage.retention import prune
from zarniwoop.tasks.store import MAX_RUNS, TaskCaller, TaskRequest, TaskStore

from ..support.clock import TestClock
from ..support.runtime import open_runtime

pytestmark = pytest.mark.anyio

ALICE = TaskCaller("acme", "review", "tok_alice")
REQUEST = TaskRequest({"question": "off-target effects of CRISPR base editors"})


async def test_a_task_answers_only_its_own_caller(tmp_path, database_url):
    clock = TestClock()
    async with await open_runtime(tmp_path, database_url=database_url) as rt:
        store = TaskStore(rt.db, rt.box, clock)
        task = await store.create(ALICE, "research_investigate", REQUEST, ttl=600, owner="p1", lease=30)
        assert len(task.id) >= 32 and task.state == "working" and task.runs == 1
        assert (await store.get(task.id, ALICE)).id == task.id
        for other in (
            TaskCaller("acme", "review", "tok_bob"),  # another token of the same scope
            TaskCaller("acme", "other", "tok_alice"),
            TaskCaller("globex", "review", "tok_alice"),
        ):
            assert await store.get(task.id, other) is None
            assert await store.cancel(task.id, other) is None
            assert await store.list_for(other) == []
        assert await store.get("no-such-task", ALICE) is None
        assert [t.id for t in await store.list_for(ALICE)] == [task.id]
        # the question is sealed: no column holds it in clear
        [row] = await rt.db.fetchall("SELECT request FROM research_tasks WHERE id = ?", (task.id,))
        assert "CRISPR" not in row[0] and row[0].startswith("v1:")
        assert (await store.request_of(task.id)).arguments == REQUEST.arguments

        cancelled = await store.cancel(task.id, ALICE)
        assert cancelled.state == "cancelled"
        # the owner can no longer write into it: its finish and renewals are refused
        assert not await store.renew(task.id, "p1", 30)
        assert not await store.finish(task.id, "p1", "completed", ttl=600, result={"full": {}})
        assert (await store.get(task.id, ALICE)).state == "cancelled"


async def test_a_lapsed_lease_is_taken_over_once_then_the_task_fails(tmp_path, database_url):
    clock = TestClock()
    async with await open_runtime(tmp_path, database_url=database_url) as rt:
        store = TaskStore(rt.db, rt.box, clock)
        task = await store.create(ALICE, "research_investigate", REQUEST, ttl=600, owner="p1", lease=30)
        assert await store.claim_orphans("p2", 30) == []  # p1's lease still runs
        clock.advance(31)
        assert await store.claim_orphans("p2", 30) == [task.id]
        assert await store.claim_orphans("p3", 30) == []  # one claimant wins
        assert not await store.renew(task.id, "p1", 30)  # p1 lost it
        taken = await store.get(task.id, ALICE)
        assert (taken.owner, taken.runs) == ("p2", 2)
        for run in range(taken.runs, MAX_RUNS):
            clock.advance(31)
            assert await store.claim_orphans(f"p{run + 3}", 30) == [task.id]
        clock.advance(31)
        assert await store.claim_orphans("late", 30) == []
        failed = await store.get(task.id, ALICE)
        assert failed.state == "failed"
        assert failed.error == f"the process running it stopped {MAX_RUNS} times; not started again"


async def test_expired_tasks_and_their_steps_go_with_the_retention_job(tmp_path, database_url):
    clock = TestClock()
    async with await open_runtime(tmp_path, database_url=database_url) as rt:
        store = TaskStore(rt.db, rt.box, clock)
        old = await store.create(ALICE, "research_investigate", REQUEST, ttl=60, owner="p1", lease=30)
        await store.keep(old.id, "search:abc", {"query": "q"})
        assert await store.recall(old.id, "search:abc") == {"query": "q"}
        kept = await store.create(ALICE, "research_investigate", REQUEST, ttl=6000, owner="p1", lease=30)
        clock.advance(61)
        assert await store.get(old.id, ALICE) is None  # expired: not found even before the purge
        removed = await prune(rt.db, retention_rules(rt.settings), now=clock.now())
        assert removed["research_tasks"] == 1
        assert await rt.db.fetchall("SELECT id FROM research_tasks") == [(kept.id,)]
        assert await rt.db.fetchall("SELECT task_id FROM research_task_steps") == []


async def test_task_ids_are_hex_never_read_as_a_command_line_option(tmp_path, database_url):
    # a url-safe id began with "-" one time in 64: `zarniwoop tasks get -Nx…` was an unknown option
    async with await open_runtime(tmp_path, database_url=database_url) as rt:
        store = TaskStore(rt.db, rt.box, TestClock())
        ids = [
            (await store.create(ALICE, "research_investigate", REQUEST, ttl=600, owner="p1", lease=30)).id
            for _ in range(200)
        ]
    assert all(re.fullmatch("[0-9a-f]{48}", i) for i in ids)
    assert len(set(ids)) == 200

"""Tasks run by `TaskRunner` (issue 45), in process against the provider emulator: a task's result
equals a direct call's; a run whose process died is taken over and resumes without repeating the
searches already answered; a cancelled task stops before any further upstream request."""

from __future__ import annotations

import pytest

from zarniwoop.contract import SearchScope
from zarniwoop.tasks.runner import TaskRunner
from zarniwoop.tasks.store import TaskCaller, TaskStore
from zarniwoop.tools.inputs import ResearchInvestigateInput
from zarniwoop.tools.investigate import INVESTIGATE
from zarniwoop.tools.registry import Toolbox

from ..support.bodies import openalex_works, wikipedia_pages
from ..support.clock import TestClock
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, open_runtime
from ..support.waiting import until_async

pytestmark = pytest.mark.anyio

QUESTION = "What evidence is there for off-target effects of CRISPR?"
CALLER = TaskCaller("default", "default", "tok_test")
ACADEMIC = "/oa/works"
WIKI = "/wiki/w/rest.php/v1/search/page"


def _settings(url: str) -> dict[str, object]:
    """ACADEMIC on `oa`, WEB and ENCYCLOPEDIA on `wiki`: three searches, nothing cached (a repeated
    search would reach the emulator), one wave."""
    return {
        **only(),
        **endpoint("oa", "openalex", f"{url}/oa"),
        **endpoint("wiki", "wikipedia", f"{url}/wiki"),
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.academic": 0,
        "research.cache.ttlSeconds.encyclopedia": 0,
        "research.investigate.minHits": 1,
    }


def _args() -> ResearchInvestigateInput:
    return ResearchInvestigateInput.model_validate({"question": QUESTION, "maxResults": 5})


def _without_timing(ranked: dict) -> dict:
    return {**ranked, "usage": {k: v for k, v in ranked["usage"].items() if k != "durationMs"}}


async def test_a_task_completes_with_the_answer_of_a_direct_call(tmp_path, emulator):
    emulator.add(ACADEMIC, Reply.json(openalex_works(2, "CRISPR off-target")))
    emulator.add(WIKI, Reply.json(wikipedia_pages("Off-target genome editing")))
    async with await open_runtime(tmp_path, _settings(emulator.url)) as rt:
        toolbox = Toolbox(rt)
        runner = TaskRunner(TaskStore(rt.db, rt.box, rt.clock), toolbox, rt.settings)
        task = await runner.start(INVESTIGATE, _args(), CALLER)
        done = await runner.wait(task.id, CALLER, timeout=60)
        direct = await toolbox.run(INVESTIGATE, _args(), SearchScope())
        await runner.aclose()
        assert done.state == "completed" and done.progress["step"] == "insights"
        assert _without_timing(done.to_json()["result"]) == _without_timing(dict(direct.full))
        assert done.result["text"].splitlines()[0] == direct.text.splitlines()[0]
        assert await runner.store.steps(task.id) == 4  # the plan and each search kept
        assert len(emulator.requests(ACADEMIC)) == 2  # the task's search and the direct call's


async def test_a_task_whose_process_died_resumes_without_repeating_searches(tmp_path, emulator):
    release = emulator.add_held(ACADEMIC, Reply.json(openalex_works(2, "CRISPR off-target")))
    emulator.add(WIKI, Reply.json(wikipedia_pages("Off-target genome editing")))
    clock = TestClock()
    try:
        async with await open_runtime(tmp_path, _settings(emulator.url)) as rt:
            store = TaskStore(rt.db, rt.box, clock)
            first = TaskRunner(store, Toolbox(rt), rt.settings, owner="first")
            task = await first.start(INVESTIGATE, _args(), CALLER)

            async def wiki_kept() -> bool:
                return await store.steps(task.id) == 3  # the plan and the two wiki searches

            await until_async(wiki_kept, "the two wiki searches kept")
            assert len(emulator.requests(ACADEMIC)) == 1  # held upstream
            first._running[task.id].cancel()  # the process dies: no finish, no release
            await until_async(lambda: task.id not in first._running, "the first run gone")
            assert (await store.get(task.id, CALLER)).state == "working"

            second = TaskRunner(store, Toolbox(rt), rt.settings, owner="second")
            assert await second.sweep() == []  # the first owner's lease still runs
            clock.advance(first.lease() + 1)
            release.set()
            assert await second.sweep() == [task.id]
            done = await second.wait(task.id, CALLER, timeout=60)
            await second.aclose()
    finally:
        release.set()
    assert (done.state, done.owner, done.runs) == ("completed", "second", 2)
    assert [s["providerInstanceId"] for s in done.result["full"]["searches"]] == ["oa", "wiki", "wiki"]
    assert len(emulator.requests(WIKI)) == 2  # WEB and ENCYCLOPEDIA, each once: recalled on resume
    assert len(emulator.requests(ACADEMIC)) == 2  # the one the dead run never saw answered, again


async def test_a_cancelled_task_stops_and_sends_nothing_more(tmp_path, emulator):
    release = emulator.add_held(ACADEMIC, Reply.json(openalex_works(2)))
    emulator.add(WIKI, Reply.json(wikipedia_pages("Off-target genome editing")))
    settings = {**_settings(emulator.url), "research.investigate.minHits": 3}  # would refine: more searches
    try:
        async with await open_runtime(tmp_path, settings) as rt:
            runner = TaskRunner(TaskStore(rt.db, rt.box, rt.clock), Toolbox(rt), rt.settings)
            task = await runner.start(INVESTIGATE, _args(), CALLER)
            await until_async(lambda: emulator.requests(ACADEMIC), "the academic search upstream")
            cancelled = await runner.cancel(task.id, CALLER)
            assert cancelled.state == "cancelled"
            await until_async(lambda: task.id not in runner._running, "the run stopped")
            release.set()
            seen = len(emulator.requests())
            assert (await runner.wait(task.id, CALLER, timeout=60)).state == "cancelled"
            assert await runner.cancel(task.id, CALLER) is not None  # again: still cancelled
            await runner.aclose()
    finally:
        release.set()
    assert len(emulator.requests()) == seen
    assert "result" not in cancelled.to_json()

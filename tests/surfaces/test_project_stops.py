"""`zarniwoop projects stop` reaches every serving process: each worker of `serve --workers N`
holds provider instances of its own, so each must dispose them, not only the first to look."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from zarniwoop import operations
from zarniwoop.contract import SearchRequest, SearchScope

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, open_runtime
from ..support.waiting import until_async

pytestmark = pytest.mark.anyio
REVIEW = SearchScope("default", "review")


async def test_every_serving_process_disposes_the_stopped_projects_instances(tmp_path, emulator, monkeypatch):
    emulator.add("/w/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Aurora")))
    settings = {
        **only(),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/w"),
        "research.cache.ttlSeconds": 0,
    }
    first = await open_runtime(tmp_path, settings)
    second = await open_runtime(tmp_path, settings)  # another process on the same database
    cli = await open_runtime(tmp_path, settings)
    polls = [0, 0]  # each serving process's reads of the stop requests: one per round of its loop
    for index, rt in enumerate((first, second)):

        async def fetchall(sql, *args, _read=rt.db.fetchall, _index=index, **kwargs):
            polls[_index] += "FROM project_stops" in sql
            return await _read(sql, *args, **kwargs)

        monkeypatch.setattr(rt.db, "fetchall", fetchall)
    loops = [asyncio.create_task(operations.serve_project_stops(rt, every=0.05)) for rt in (first, second)]
    try:
        for rt in (first, second):
            result = await rt.dispatcher.search(SearchRequest.create("aurora", "encyclopedia"), REVIEW)
            assert result.provider_instance_id == "wiki"
        disposed = await operations.request_project_stop(cli, REVIEW, wait=10)
        assert disposed is not None and disposed >= 1
        await until_async(  # the other server carries it out on its next poll
            lambda: not any(REVIEW in rt.factory._cache for rt in (first, second)), "both disposing"
        )
        # a request is carried out once per process: instances built afterwards stay
        for rt in (first, second):
            await rt.dispatcher.search(SearchRequest.create("aurora 2", "encyclopedia"), REVIEW)
        # two more rounds of each loop: the first of them began after the rebuild, and has ended
        after = list(polls)
        await until_async(
            lambda: all(n >= a + 2 for n, a in zip(polls, after, strict=True)), "two polls each"
        )
        assert [REVIEW in rt.factory._cache for rt in (first, second)] == [True, True]
    finally:
        for task in loops:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for rt in (first, second, cli):
            await rt.aclose()

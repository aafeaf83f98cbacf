"""Refresh by atomic swap (seed 002 §3a.4): readers never see a half-built catalog."""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import pytest

from zarniwoop.contract import SearchScope

from .catalog_support import Docs

pytestmark = pytest.mark.anyio

SCOPE = SearchScope("acme", "review")
MODELS = 30


def write_generation(docs: Docs, generation: int) -> None:
    """Every model gets its price from a manual layer and its context window from an auto layer of
    an inner scope — a reader mixing two generations, or catching a half-built index, would see a
    price and a context window that disagree, or fewer models."""
    for i in range(MODELS):
        docs.write(
            "sys-manual",
            f"openai/model-{i}.yaml",
            {"size": "SMALL", "pricing": {"inputPerMTok": float(generation)}},
        )
        docs.write("proj-auto", f"openai/model-{i}.yaml", {"contextWindowTokens": generation * 1000})


def check(catalog, seen: list[int], problems: list[str]) -> None:
    snapshot = catalog.snapshot
    models = snapshot.view(SCOPE.tenant, SCOPE.project).models()
    if any(d.pricing is None or d.context_window_tokens is None for d in models):
        problems.append("models with only some of their layers merged")
        return
    generations = {int(d.pricing.input_per_mtok) for d in models}
    if len(models) != MODELS or len(generations) != 1:
        problems.append(f"view of {len(models)} models from generations {sorted(generations)}")
        return
    generation = generations.pop()
    if any(d.context_window_tokens != generation * 1000 for d in models):
        problems.append(f"generation {generation}: context windows of another generation")
    for i in (0, MODELS // 2, MODELS - 1):
        doc = catalog.lookup("openai", f"model-{i}", SCOPE)
        if doc is None or doc.context_window_tokens != int(doc.pricing.input_per_mtok) * 1000:
            problems.append(f"lookup of model-{i} inconsistent: {doc}")
    if seen and generation < seen[-1]:
        problems.append(f"generation went back from {seen[-1]} to {generation}")
    seen.append(generation)


async def test_lookups_hammered_during_refreshes_never_see_a_half_built_catalog(tmp_path):
    docs = Docs(tmp_path)
    write_generation(docs, 1)
    catalog = docs.catalog()
    await catalog.refresh()
    stop = threading.Event()
    problems: list[str] = []
    seen_by_thread: list[list[int]] = [[] for _ in range(3)]

    def reader(seen: list[int]) -> None:
        while not stop.is_set():
            check(catalog, seen, problems)
            time.sleep(0)  # yield the GIL, so the refresh itself is not starved

    threads = [threading.Thread(target=reader, args=(seen,)) for seen in seen_by_thread]
    task_seen: list[int] = []

    async def task_reader() -> None:
        while not stop.is_set():
            check(catalog, task_seen, problems)
            await asyncio.sleep(0)

    for t in threads:
        t.start()
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(task_reader)
            for generation in range(2, 16):
                await anyio.to_thread.run_sync(write_generation, docs, generation)
                report = await catalog.refresh()
                assert report.documents_loaded == 2 * MODELS
            stop.set()
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)

    assert problems == []
    all_seen = [g for seen in [*seen_by_thread, task_seen] for g in seen]
    assert len(all_seen) > 200, "the readers barely ran; the test would prove nothing"
    assert len(set(all_seen)) >= 5, "the readers saw too few generations to have raced the refreshes"
    assert catalog.lookup("openai", "model-7", SCOPE).context_window_tokens == 15000


class FailingStore:
    def __init__(self, inner) -> None:
        self.inner = inner
        self.fail = False

    async def scan(self, prefix, tenant=None):
        if self.fail:
            raise OSError("disk on fire")
        return await self.inner.scan(prefix, tenant)


async def test_a_failed_refresh_keeps_the_previous_snapshot(tmp_path):
    docs = Docs(tmp_path)
    write_generation(docs, 1)
    catalog = docs.catalog()
    store = FailingStore(docs.store)
    catalog.store = store
    await catalog.refresh()
    before = catalog.snapshot
    store.fail = True
    with pytest.raises(OSError):
        await catalog.refresh()
    assert catalog.snapshot is before
    assert catalog.lookup("openai", "model-3", SCOPE).context_window_tokens == 1000


async def test_the_refresh_loop_picks_up_new_documents_and_stops_on_close(tmp_path):
    docs = Docs(tmp_path)
    catalog = docs.catalog()
    await catalog.refresh()
    assert catalog.lookup("openai", "gpt-4o") is None
    task = catalog.start_refresh_loop(interval=0.02)
    assert catalog.start_refresh_loop(interval=0.02) is task  # one loop per catalog
    docs.write("sys-manual", "openai/gpt-4o.yaml", {"contextWindowTokens": 128000})
    with anyio.fail_after(60):
        while catalog.lookup("openai", "gpt-4o") is None:
            await asyncio.sleep(0.01)
    await catalog.aclose()
    assert task.cancelled()


async def test_merged_views_are_built_once_per_scope_and_snapshot(tmp_path):
    docs = Docs(tmp_path)
    write_generation(docs, 1)
    catalog = docs.catalog()
    await catalog.refresh()
    view = catalog.view(SCOPE)
    assert catalog.view(SCOPE) is view
    assert catalog.view(SearchScope("acme", "other")) is not view
    await catalog.refresh()
    assert catalog.view(SCOPE) is not view  # a new snapshot, new views

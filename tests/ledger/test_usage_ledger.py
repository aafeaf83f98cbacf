"""One ledger, one interface: both writers (provider calls, LLM usage) and every report — the
search usage, the LLM dashboard and both timeseries — through `Runtime.ledger`, on SQLite and
PostgreSQL. No query's plaintext reaches the spool or the tables; money is summed exactly."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from zarniwoop.contract import Outcome, SearchRequest, SearchScope
from zarniwoop.contract.results import Attempt
from zarniwoop.ledger import UsageRecord
from zarniwoop.storage.privacy import query_hash

from ..support.runtime import open_runtime

pytestmark = pytest.mark.anyio
SCOPE = SearchScope()
SECRET = "quokka-plaintext-marker"
NOON = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def charge(i: int, cost: float | None, *, account: str = "mike", model: str = "gpt-4o") -> UsageRecord:
    return UsageRecord(
        "default", account, "default", None, "openai", "openai", model, "light", 100, 10 * i, cost, "tenant", 50,
        id=f"usage_{i}", created_at=NOON.replace(minute=i).isoformat(timespec="milliseconds"),
    )  # fmt: skip


async def test_both_writers_and_every_report_go_through_one_ledger(tmp_path, database_url):
    async with await open_runtime(tmp_path, {}, database_url=database_url) as rt:
        ledger = rt.ledger
        assert ledger.calls is rt.usage and (await rt.llm()).usage is ledger.llm
        rt.usage.linger = 60  # the background flusher stays out of the way until flush() below
        instance = (await rt.factory.providers(SCOPE)).instances["wikipedia"]
        request = SearchRequest.create(f"{SECRET} query", "encyclopedia")
        ledger.calls.on_call_started(SCOPE, instance, request, "call_1")
        ledger.calls.on_attempt(
            SCOPE, instance, request, Attempt("wikipedia", Outcome.SUCCESS, None, 120), 4, call_id="call_1"
        )
        spooled = "".join(p.read_text() for p in rt.usage.spool.directory.glob("*.jsonl"))
        assert query_hash(f"{SECRET} query") in spooled and SECRET not in spooled
        for i, cost in enumerate((0.1, 0.2, None), start=1):
            await ledger.llm.record(charge(i, cost, model="gpt-4o" if cost else "local-model"))

        now = time.time()
        research = await ledger.research(SCOPE, since=now - 86400)
        board = await ledger.llm_dashboard(
            "default", budgets=rt.quota_ledger, directory=rt.org, now=NOON.replace(hour=13)
        )
        calls = await ledger.timeseries(
            "research", SCOPE, since=now - 3600, until=now + 60, bucket="hour", by="instance"
        )
        tokens = await ledger.timeseries(
            "llm",
            SCOPE,
            since=NOON.timestamp() - 3600,
            until=NOON.timestamp() + 3600,
            bucket="day",
            by="model",
        )
        stored = await rt.db.fetchall("SELECT * FROM research_call_records")

    assert [
        (r["instance"], r["modality"], r["calls"], r["hits"], r["failures"]) for r in research["rows"]
    ] == [("wikipedia", "ENCYCLOPEDIA", 1, 4, 0)]
    assert research["totals"] == {"calls": 1, "hits": 4, "failures": 0}
    assert len(stored) == 1 and SECRET not in repr(stored[0]) and query_hash(f"{SECRET} query") in stored[0]
    assert [(s["key"], s["totals"]["calls"], s["totals"]["hits"]) for s in calls["series"]] == [
        ({"instance": "wikipedia"}, 1, 4)
    ]
    today = board["today"]
    assert (today["calls"], today["totalTokens"], today["estimatedCostUsd"], today["unpricedCalls"]) == (
        3, 360, 0.3, 1,
    )  # fmt: skip
    assert today["byModel"] == [
        {"instance": "openai", "model": "gpt-4o", "tokens": 230},
        {"instance": "openai", "model": "local-model", "tokens": 130},
    ]
    assert board["month"]["estimatedCostUsd"] == 0.3
    totals = {s["key"]["model"]: s["totals"] for s in tokens["series"]}
    assert (totals["gpt-4o"]["costUsd"], totals["gpt-4o"]["tokensTotal"]) == (0.3, 230)
    assert (totals["local-model"]["costUsd"], totals["local-model"]["unpricedCalls"]) == (0.0, 1)

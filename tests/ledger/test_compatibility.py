"""The ledger package (issue 42) changed no table: rows written the way main wrote them before it
— with the INSERTs of `storage/usage.py` and `llm/usage.py` as they were, which an older process's
spool still replays — are every one found by the ledger's writers and reports."""

from __future__ import annotations

import json
import time

import pytest

from zarniwoop.contract import SearchScope
from zarniwoop.ledger import LLM_USAGE, RESEARCH_CALLS

from ..support.runtime import open_runtime

pytestmark = pytest.mark.anyio

MAIN_RESEARCH_INSERT = (
    "INSERT INTO research_call_records (id, tenant, project, instance_id, protocol, modality, tier, "
    "query_hash, hit_count, ok, outcome, error_message, started_at, duration_ms, profile) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING"
)
# issue 44 added one column (migration 0040, the call's trace): main's INSERT above still works on the
# table (the rows below are written with it), the ledger's own names the column too.
LEDGER_RESEARCH_INSERT = MAIN_RESEARCH_INSERT.replace("profile)", "profile, trace_id)").replace(
    "?) ON", "?, ?) ON"
)
MAIN_LLM_INSERT = (
    "INSERT INTO llm_usage_records (id, tenant, account, project, team, session_id, think_process_id, node_id, "
    "provider, instance, model, purpose, tokens_input, tokens_output, tokens_total, cost_usd, credential_source, "
    "duration_ms, outcome, error, failover, attempts, created_at) VALUES "
    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING"
)


def test_the_ledger_inserts_what_main_inserted():
    assert RESEARCH_CALLS.insert_sql == LEDGER_RESEARCH_INSERT
    # issue 43 added one column (migration 0038): main's insert, with `usage_estimated` last …
    main_columns = MAIN_LLM_INSERT.split("(", 1)[1].split(")", 1)[0].split(", ")
    assert LLM_USAGE.columns == (*main_columns, "usage_estimated")
    # … and a row an older process spooled without it is replayed with its default
    old_row = ("usage_x",) + (None,) * (len(main_columns) - 1)
    assert LLM_USAGE.complete(old_row) == (*old_row, False)
    assert LLM_USAGE.complete((*old_row, True)) == (*old_row, True)


async def test_rows_written_the_old_way_are_all_found(tmp_path, database_url):
    now = time.time()
    calls = [
        (f"c{i}", "default", "default", "oa", "openalex", "ACADEMIC", "NORMAL", "h" * 64, i, i != 2,
         "success" if i != 2 else "hard_error", None if i != 2 else "HTTP 503", now - 60 * i, 100 * i, None)
        for i in range(1, 4)
    ]  # fmt: skip
    switch = json.dumps([{"from": "anthropic", "to": "openai", "reason": "HTTP 529"}])
    attempts = json.dumps([
        {"instance": "anthropic", "model": "claude", "outcome": "error", "error": "HTTP 529", "status": 529,
         "durationMs": 40, "waitedMs": 0},
        {"instance": "openai", "model": "gpt-4o", "outcome": "ok", "error": None, "status": None,
         "durationMs": 300, "waitedMs": 0},
    ])  # fmt: skip
    charges = [
        ("usage_a", "default", "mike", "default", None, None, None, None, "openai", "openai", "gpt-4o", "light",
         1200, 345, 1545, 0.0042, "tenant", 812, "ok", None, switch, attempts, "2026-03-10T12:00:00.000+00:00"),
        ("usage_b", "default", "mike", "default", None, None, None, None, "openai", "openai", "gpt-4o", "light",
         10, 5, 15, None, "tenant", 20, "blocked", "over budget", "[]", "[]", "2026-03-10T12:30:00.000+00:00"),
    ]  # fmt: skip
    async with await open_runtime(tmp_path, {}, database_url=database_url) as rt:
        await rt.db.executemany(MAIN_RESEARCH_INSERT, calls)
        await rt.db.executemany(MAIN_LLM_INSERT, charges)
        research = await rt.ledger.research(SearchScope(), since=now - 3600)
        first = await rt.ledger.llm.get("usage_a")
        every = await rt.ledger.llm.query("default")

    assert research["totals"] == {"calls": 3, "hits": 6, "failures": 1}
    assert [r.id for r in every] == ["usage_b", "usage_a"]  # newest first
    assert first is not None
    assert (first.tokens_total, first.cost_usd, first.duration_ms) == (1545, 0.0042, 812)
    assert [s.to_json() for s in first.failover] == json.loads(switch)
    assert [a.to_json() for a in first.attempts] == json.loads(attempts)

"""The one retention job: LLM usage records and traces (`ai.usage.retentionDays`) and provider-call
records (`research.log.retentionDays`), enforced on both backends by the same run: periodically by a
running server, and at a CLI start at most once a day (the last run is a row in `maintenance_runs`,
shared by every process on the database)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from zarniwoop.ledger import CallRecord, UsageRecord, UsageStore
from zarniwoop.runtime import Runtime
from zarniwoop.surfaces.cli import app as cli
from zarniwoop.surfaces.http.app import create_app

from ..support.runtime import write_config

RETENTION = {"ai.usage.retentionDays": 30, "research.log.retentionDays": 30}


def config(tmp_path: Path, database_url: str | None, **settings: object) -> Path:
    body: dict = {"settings": {**RETENTION, **settings}, "tenants": {"acme": {}}}
    if database_url:
        body["database_url"] = database_url
    return write_config(tmp_path, body)


def record(usage_id: str, age_days: float) -> UsageRecord:
    created = (datetime.now(UTC) - timedelta(days=age_days)).isoformat(timespec="milliseconds")
    return UsageRecord(
        id=usage_id, tenant="acme", account="mike", project="p", team=None, provider="openai", instance="openai",
        model="gpt-4o", purpose="light", tokens_input=1, tokens_output=1, cost_usd=None,
        credential_source="tenant", duration_ms=1, created_at=created,
    )  # fmt: skip


def run(coro_factory, path: Path, home: Path):
    async def go():
        async with await Runtime.open(path, home=home) as runtime:
            return await coro_factory(runtime)

    return asyncio.run(go())


def insert(path: Path, home: Path, *rows: tuple[str, float]) -> None:
    async def body(runtime: Runtime) -> None:
        store = UsageStore(runtime.db)
        for usage_id, age in rows:
            # a provider call of the same age beside each LLM call: one job ages out both
            await runtime.usage.write([
                CallRecord(
                    "call_" + usage_id, "acme", "p", "x", "openalex", "WEB", "NORMAL", "h", 0, True, "empty", None,
                    time.time() - age * 86400, 5,
                )
            ])  # fmt: skip
            await store.record(record(usage_id, age))
            created = (datetime.now(UTC) - timedelta(days=age)).isoformat()
            await runtime.db.execute(
                "INSERT INTO llm_traces (id, usage_id, tenant, provider, instance, model, request, created_at) "
                "VALUES (?, ?, 'acme', 'openai', 'openai', 'gpt-4o', '{}', ?)",
                ("trace_" + usage_id, usage_id, created),
            )

    run(body, path, home)


def remaining(path: Path, home: Path) -> tuple[list[str], list[str], list[str]]:
    """The ids left of the LLM usage records, of the traces' usage records and of the provider calls
    (named after the LLM call they were inserted beside)."""

    async def body(runtime: Runtime) -> tuple[list[str], list[str], list[str]]:
        usage = await runtime.db.fetchall("SELECT id FROM llm_usage_records ORDER BY id")
        traces = await runtime.db.fetchall("SELECT usage_id FROM llm_traces ORDER BY usage_id")
        calls = await runtime.db.fetchall("SELECT id FROM research_call_records ORDER BY id")
        return [r[0] for r in usage], [r[0] for r in traces], [r[0].removeprefix("call_") for r in calls]

    return run(body, path, home)


def test_a_running_server_purges_at_start_and_then_periodically(tmp_path, database_url):
    home = tmp_path / "home"
    path = config(tmp_path, database_url, **{"ai.usage.purgeIntervalSeconds": 0.3})
    insert(path, home, ("usage_old", 40), ("usage_recent", 29))
    with TestClient(create_app(config=path, home=home)):
        deadline = time.monotonic() + 60
        while remaining(path, home)[::2] != (["usage_recent"],) * 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert remaining(path, home) == (["usage_recent"],) * 3  # at start
        insert(path, home, ("usage_old2", 31), ("usage_new", 0))  # while it runs
        deadline = time.monotonic() + 60
        while any("usage_old2" in ids for ids in remaining(path, home)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert remaining(path, home) == (["usage_new", "usage_recent"],) * 3


def test_a_cli_start_purges_at_most_once_a_day(tmp_path, database_url, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("ZARNIWOOP_HOME", str(home))
    path = config(tmp_path, database_url)
    insert(path, home, ("usage_old", 91), ("usage_month", 31), ("usage_recent", 1))

    before = datetime.now(UTC)
    first = CliRunner().invoke(
        cli, ["--config", str(path), "settings", "list", "--json"], catch_exceptions=False
    )
    after = datetime.now(UTC)
    assert first.exit_code == 0, first.stderr
    assert remaining(path, home) == (["usage_recent"],) * 3
    [(ran_at,)] = run(lambda rt: rt.db.fetchall("SELECT ran_at FROM maintenance_runs"), path, home)
    assert before <= datetime.fromisoformat(ran_at) <= after  # run by that start, not an older one

    insert(path, home, ("usage_old2", 40))
    again = CliRunner().invoke(
        cli, ["--config", str(path), "settings", "list", "--json"], catch_exceptions=False
    )
    assert again.exit_code == 0, again.stderr
    assert remaining(path, home) == (["usage_old2", "usage_recent"],) * 3  # not due again within the day

    yesterday = (datetime.now(UTC) - timedelta(days=1, minutes=1)).isoformat()
    run(lambda rt: rt.db.execute("UPDATE maintenance_runs SET ran_at = ?", (yesterday,)), path, home)
    third = CliRunner().invoke(
        cli, ["--config", str(path), "settings", "list", "--json"], catch_exceptions=False
    )
    assert third.exit_code == 0, third.stderr
    assert remaining(path, home) == (["usage_recent"],) * 3

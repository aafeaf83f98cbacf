"""The usage report: calls, hits, failures, p50/p95 latency and quota per instance and modality."""

from __future__ import annotations

import time

import pytest

from zarniwoop import operations
from zarniwoop.contract import SearchScope
from zarniwoop.contract.errors import InvalidRequestError
from zarniwoop.ledger import CallRecord, parse_since, percentile

from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio


def test_percentile_is_nearest_rank():
    values = list(range(1, 101))
    assert (percentile(values, 0.5), percentile(values, 0.95)) == (50, 95)
    assert percentile([7], 0.95) == 7
    assert percentile([], 0.5) is None


def test_since_accepts_durations_and_iso_dates():
    assert parse_since("24h", now=100_000.0) == 100_000.0 - 86400
    assert parse_since("7d", now=1_000_000.0) == 1_000_000.0 - 7 * 86400
    assert parse_since("2025-04-01") == 1743465600.0
    with pytest.raises(InvalidRequestError) as err:
        parse_since("yesterday-ish")
    assert err.value.field == "since"


async def test_report_groups_per_instance_and_modality_for_the_scope(tmp_path, database_url):
    settings = {**only(), **endpoint("oa", "openalex", "http://127.0.0.1:9/oa", quota__daily=100)}
    async with await open_runtime(tmp_path, settings, database_url=database_url) as rt:
        now = time.time()
        scope, other = SearchScope(), SearchScope("acme", "x")

        def record(i, instance, modality, hits, ok, ms, scope=scope, age=60):
            return CallRecord(
                f"id{i}", scope.tenant, scope.project, instance, "openalex", modality, "NORMAL", "h", hits, ok,
                "success" if ok else "hard_error", None, now - age, ms,
            )  # fmt: skip

        await rt.usage.write(
            [record(i, "oa", "ACADEMIC", 3, True, 10 * i) for i in range(1, 20)]
            + [record(20, "oa", "ACADEMIC", 0, False, 5000)]
            + [record(21, "oa", "WEB", 1, True, 40)]
            + [record(22, "oa", "ACADEMIC", 9, True, 1, scope=other)]  # another scope: not in this report
            + [record(23, "oa", "ACADEMIC", 9, True, 1, age=3 * 86400)]  # outside the window
        )
        await rt.db.execute(
            "INSERT INTO quota_counters (tenant, project, instance_id, period, window_start, used, updated_at) "
            "VALUES ('_system', '_tenant', 'oa', 'day', ?, 20, ?)",
            (time.strftime("%Y-%m-%d", time.gmtime(now)), now),
        )
        report = await operations.research_usage(rt, scope, since=now - 86400)
    rows = {(r["instance"], r["modality"]): r for r in report["rows"]}
    academic = rows[("oa", "ACADEMIC")]
    assert {k: academic[k] for k in ("protocol", "calls", "hits", "failures", "p50Ms", "p95Ms")} == {
        "protocol": "openalex",
        "calls": 20,
        "hits": 57,
        "failures": 1,
        "p50Ms": 100,
        "p95Ms": 190,
    }
    assert (academic["quota"]["used"], academic["quota"]["limit"], academic["quota"]["period"]) == (
        20,
        100,
        "day",
    )
    assert rows[("oa", "WEB")]["calls"] == 1
    assert report["totals"] == {"calls": 21, "hits": 58, "failures": 1}
    assert report["quotas"][0]["instance"] == "oa"

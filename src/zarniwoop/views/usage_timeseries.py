"""Usage over time: provider calls and LLM tokens per hour or day, one series per instance, project,
account or model — the data of the console's usage charts (`GET /v1/usage/timeseries`).

    report = await research_timeseries(db, scope, since=since, until=until, bucket="hour", by="instance")
    report["series"][0]  # {"key": {"instance": "wiki"}, "totals": {...},
                         #  "points": [{"t": "2026-12-01T10:00:00Z", "calls": 3, "failures": 1,
                         #              "hits": 12, "p50Ms": 180, "p95Ms": 410}, ...]}
    report = await llm_timeseries(db, "acme", project="ui", since=..., bucket="day", by="model")
    #  points: {"t", "calls", "tokensInput", "tokensOutput", "tokensTotal", "costUsd", "unpricedCalls"}

The rules, the same for both kinds:
- buckets are UTC hours or UTC days; `since` is rounded down to the start of its bucket, so every
  bucket covers a whole hour or day (the last one ends at `until`, usually "now", and is partial);
- every series has one point per bucket, zero-filled: a bucket without calls says `calls: 0` and
  its latencies are `null` (no data, not 0 ms), so a chart's x-axis is the same for every series;
- `p50Ms`/`p95Ms` are nearest-rank percentiles of the durations of that bucket's calls (as
  `zarniwoop usage` computes them for the whole window);
- at most `MAX_BUCKETS` buckets (a 422 naming `since` otherwise) and at most `MAX_SERIES`
  series: the largest ones by calls (research) or tokens (LLM) are kept and the rest are summed
  into one series whose key value is `"(others)"` (`"othersFolded"` says how many went into it);
- LLM points count successful calls only, as the dashboard does; `costUsd` sums the priced calls
  and `unpricedCalls` counts the others (a cost is never guessed).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal

from ..contract.errors import InvalidRequestError
from ..limits.clock import iso_utc
from .usage import percentile

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..storage.db import Database
    from ..storage.usage import ZarniwoopUsageCounter

Bucket = Literal["hour", "day"]
BUCKET_SECONDS: Final = {"hour": 3600, "day": 86400}
MAX_BUCKETS: Final = 2000
"""83 days by the hour, five and a half years by the day."""
MAX_SERIES: Final = 20
OTHERS: Final = "(others)"

RESEARCH_BY: Final = ("instance", "modality")
LLM_BY: Final = ("project", "account", "model", "provider")


def bucket_starts(since: float, until: float, bucket: str) -> list[float]:
    """The start (epoch seconds, UTC-aligned) of every bucket from `since`'s bucket to `until`'s."""
    if bucket not in BUCKET_SECONDS:
        raise InvalidRequestError("bucket", f"expected hour or day, got {bucket!r}")
    if until <= since:
        raise InvalidRequestError("since", f"must be before until ({iso_utc(until)})")
    step = BUCKET_SECONDS[bucket]
    first = math.floor(since / step) * step
    count = math.ceil((until - first) / step)
    if count > MAX_BUCKETS:
        hint = "use bucket=day or a later since" if bucket == "hour" else "use a later since"
        raise InvalidRequestError(
            "since", f"{count} {bucket} buckets from {iso_utc(since)} is more than {MAX_BUCKETS}: {hint}"
        )
    return [first + i * step for i in range(count)]


def _check_by(by: str, allowed: Sequence[str], kind: str) -> None:
    if by not in allowed:
        choices = f"{', '.join(allowed[:-1])} or {allowed[-1]}"
        raise InvalidRequestError("by", f"{kind} usage is grouped by {choices}, got {by!r}")


def _index(starts: list[float], bucket: str, moment: float) -> int | None:
    position = int((moment - starts[0]) // BUCKET_SECONDS[bucket])
    return position if 0 <= position < len(starts) else None


def _fold(
    groups: dict[tuple[str | None, ...], list[list[Any]]],
    weight: Callable[[list[list[Any]]], float],
) -> tuple[list[tuple[tuple[str | None, ...], list[list[Any]]]], int]:
    """The `MAX_SERIES - 1` heaviest groups and, when there are more, the rest merged as `OTHERS`."""
    ordered = sorted(groups.items(), key=lambda kv: (-weight(kv[1]), tuple(str(k) for k in kv[0])))
    if len(ordered) <= MAX_SERIES:
        return ordered, 0
    kept, rest = ordered[: MAX_SERIES - 1], ordered[MAX_SERIES - 1 :]
    merged: list[list[Any]] = [[] for _ in rest[0][1]]
    for _, cells in rest:
        for i, cell in enumerate(cells):
            merged[i].extend(cell)
    width = len(rest[0][0])
    return [*kept, ((OTHERS,) * width, merged)], len(rest)


def _key(by: str, values: tuple[str | None, ...]) -> dict[str, str | None]:
    names = ("instance", "model") if by == "model" else (by,)
    return dict(zip(names, values, strict=True))


async def research_timeseries(
    db: Database,
    scope: SearchScope,
    *,
    since: float,
    until: float,
    bucket: str = "hour",
    by: str = "instance",
    audit: ZarniwoopUsageCounter | None = None,
    query: bool = True,
) -> dict[str, Any]:
    """Provider calls, failures, hits and p50/p95 latency per bucket, one series per instance (or
    modality). `query=False`: the empty report (no audit log is kept), its parameters checked."""
    _check_by(by, RESEARCH_BY, "research")
    starts = bucket_starts(since, until, bucket)
    if audit is not None:
        # this process's latest calls belong in the chart; a database outage leaves what is stored
        with contextlib.suppress(Exception):
            await audit.flush(orphans=False)
    column = "instance_id" if by == "instance" else "modality"
    rows = (
        []
        if not query
        else await db.fetchall(
            f"SELECT {column}, started_at, ok, hit_count, duration_ms FROM research_call_records "
            "WHERE tenant = ? AND project = ? AND started_at >= ? AND started_at < ?",
            (scope.tenant, scope.project, starts[0], until),
        )
    )
    # per group, per bucket: the calls as (ok, hits, duration)
    groups: dict[tuple[str | None, ...], list[list[Any]]] = {}
    for name, started_at, ok, hits, duration_ms in rows:
        index = _index(starts, bucket, float(started_at))
        if index is None:
            continue
        key = (str(name),)
        cells = groups.get(key)
        if cells is None:
            cells = groups[key] = [[] for _ in starts]
        cells[index].append((bool(ok), int(hits), int(duration_ms)))

    def weight(cells: list[list[Any]]) -> float:
        return sum(len(cell) for cell in cells)

    kept, folded = _fold(groups, weight)
    series = []
    for values, cells in kept:
        points = [_research_point(start, calls) for start, calls in zip(starts, cells, strict=True)]
        everything = [call for cell in cells for call in cell]
        totals = _research_point(starts[0], everything)
        del totals["t"]
        series.append({"key": _key(by, values), "totals": totals, "points": points})
    return {
        "kind": "research",
        "scope": {"tenant": scope.tenant, "project": scope.project},
        "bucket": bucket,
        "by": by,
        "since": iso_utc(starts[0]),
        "until": iso_utc(until),
        "bucketCount": len(starts),
        "othersFolded": folded,
        "series": series,
    }


def _research_point(start: float, calls: list[tuple[bool, int, int]]) -> dict[str, Any]:
    durations = sorted(duration for _, _, duration in calls)
    return {
        "t": iso_utc(start),
        "calls": len(calls),
        "failures": sum(1 for ok, _, _ in calls if not ok),
        "hits": sum(hits for _, hits, _ in calls),
        "p50Ms": percentile(durations, 0.50),
        "p95Ms": percentile(durations, 0.95),
    }


async def llm_timeseries(
    db: Database,
    tenant: str,
    *,
    since: float,
    until: float,
    bucket: str = "day",
    by: str = "project",
    account: str | None = None,
    project: str | None = None,
) -> dict[str, Any]:
    """LLM tokens in/out and estimated cost per bucket, one series per project, account, model or provider
    (of the tenant, narrowed to one account and/or one project)."""
    _check_by(by, LLM_BY, "LLM")
    starts = bucket_starts(since, until, bucket)
    # `created_at` is an ISO string written by `UsageRecord` (UTC, `+00:00`): compared as text
    # with bounds of the same form, and parsed per row for its bucket.
    columns = {"project": "project", "account": "account", "provider": "provider", "model": "instance, model"}
    sql = (
        f"SELECT {columns[by]}, created_at, tokens_input, tokens_output, cost_usd FROM llm_usage_records "
        # answered calls and those their client abandoned, charged what the upstream produced (llm/settlement.py)
        "WHERE tenant = ? AND outcome IN ('ok', 'cancelled') AND created_at >= ? AND created_at < ?"
    )
    params: list[Any] = [tenant, _iso_ms(starts[0]), _iso_ms(until)]
    if account is not None:
        sql += " AND account = ?"
        params.append(account)
    if project is not None:
        sql += " AND project = ?"
        params.append(project)
    groups: dict[tuple[str | None, ...], list[list[Any]]] = {}
    width = 2 if by == "model" else 1
    for row in await db.fetchall(sql, params):
        values = tuple(None if v is None else str(v) for v in row[:width])
        created_at, tokens_in, tokens_out, cost = row[width:]
        moment = datetime.fromisoformat(str(created_at).replace("Z", "+00:00"))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        index = _index(starts, bucket, moment.timestamp())
        if index is None:
            continue
        cells = groups.get(values)
        if cells is None:
            cells = groups[values] = [[] for _ in starts]
        cells[index].append((int(tokens_in), int(tokens_out), None if cost is None else float(cost)))

    def weight(cells: list[list[Any]]) -> float:
        return float(sum(int(i) + int(o) for cell in cells for i, o, _ in cell))

    kept, folded = _fold(groups, weight)
    series = []
    for values, cells in kept:
        points = [_llm_point(start, calls) for start, calls in zip(starts, cells, strict=True)]
        totals = _llm_point(starts[0], [call for cell in cells for call in cell])
        del totals["t"]
        series.append({"key": _key(by, values), "totals": totals, "points": points})
    return {
        "kind": "llm",
        "scope": {"tenant": tenant, "project": project, "account": account},
        "bucket": bucket,
        "by": by,
        "since": iso_utc(starts[0]),
        "until": iso_utc(until),
        "bucketCount": len(starts),
        "othersFolded": folded,
        "series": series,
    }


def _llm_point(start: float, calls: list[tuple[int, int, float | None]]) -> dict[str, Any]:
    tokens_in = sum(i for i, _, _ in calls)
    tokens_out = sum(o for _, o, _ in calls)
    priced = [c for _, _, c in calls if c is not None]
    return {
        "t": iso_utc(start),
        "calls": len(calls),
        "tokensInput": tokens_in,
        "tokensOutput": tokens_out,
        "tokensTotal": tokens_in + tokens_out,
        "costUsd": round(sum(priced), 6),
        "unpricedCalls": len(calls) - len(priced),
    }


def _iso_ms(epoch: float) -> str:
    """The form `UsageRecord.created_at` is written in, for a text comparison."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


__all__ = [
    "LLM_BY",
    "MAX_BUCKETS",
    "MAX_SERIES",
    "RESEARCH_BY",
    "bucket_starts",
    "llm_timeseries",
    "research_timeseries",
]

"""Usage over time: provider calls and LLM tokens per hour or day, one series per instance, project,
account or model — the data of the console's usage charts (`GET /v1/usage/timeseries`).

    report = await timeseries(db, RESEARCH, {"tenant": "acme", "project": "ui"}, since=since, until=until,
                              bucket="hour", by="instance")
    report["series"][0]  # {"key": {"instance": "wiki"}, "totals": {...},
                         #  "points": [{"t": "2026-12-01T10:00:00Z", "calls": 3, "failures": 1,
                         #              "hits": 12, "p50Ms": 180, "p95Ms": 410}, ...]}
    report = await timeseries(db, LLM, {"tenant": "acme", "project": "ui", "account": None}, since=since,
                              until=until, bucket="day", by="model")
    #  points: {"t", "calls", "tokensInput", "tokensOutput", "tokensTotal", "costUsd", "unpricedCalls"}

Both are one function, `timeseries`, over a `SeriesSpec` that names a ledger table (`ledger/tables.py`:
its time column and how it stores a moment), grouping columns and measures (`RESEARCH`, `LLM`),
read through the one query engine (`ledger/query.py`): a third ledger is a third spec, not a third copy.

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
- LLM points count answered calls and the ones their client abandoned (`ok`, `cancelled`), as the
  dashboard does; `costUsd` sums the priced calls and `unpricedCalls` counts the others (a cost is never guessed).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from ..contract.errors import InvalidRequestError
from ..limits.clock import iso_utc
from .query import percentile, select, usd_total
from .tables import LLM_USAGE, RESEARCH_CALLS, LedgerTable

if TYPE_CHECKING:
    from ..storage.db import Database

Bucket = Literal["hour", "day"]
BUCKET_SECONDS: Final = {"hour": 3600, "day": 86400}
MAX_BUCKETS: Final = 2000
"""83 days by the hour, five and a half years by the day."""
MAX_SERIES: Final = 20
OTHERS: Final = "(others)"


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


@dataclass(frozen=True, slots=True)
class SeriesSpec:
    """How one usage table becomes a timeseries: the one place that knows its columns.

    `group_by` maps each `by` to the columns read and the names they get in a series' key;
    `measures` are read after the time column and each row becomes one call tuple of them;
    `point` turns a bucket's calls into its point and `weight` says which series are kept."""

    kind: str
    noun: str
    """How an error names the kind: "research", "LLM"."""
    table: LedgerTable
    group_by: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]
    measures: tuple[str, ...]
    point: Callable[[float, list[tuple[Any, ...]]], dict[str, Any]]
    weight: Callable[[tuple[Any, ...]], float]
    condition: str = ""

    @property
    def default_by(self) -> str:
        """The grouping when none is asked for: the first of `group_by`."""
        return next(iter(self.group_by))


async def timeseries(
    db: Database,
    spec: SeriesSpec,
    filters: Mapping[str, str | None],
    *,
    since: float,
    until: float,
    bucket: str,
    by: str,
    query: bool = True,
) -> dict[str, Any]:
    """One series per `by` group of `spec.table`'s rows matching `filters` (a `None` filter is not
    applied), one zero-filled point per bucket. `query=False`: the empty report, parameters checked."""
    if by not in spec.group_by:
        allowed = list(spec.group_by)
        choices = f"{', '.join(allowed[:-1])} or {allowed[-1]}"
        raise InvalidRequestError("by", f"{spec.noun} usage is grouped by {choices}, got {by!r}")
    starts = bucket_starts(since, until, bucket)
    columns, names = spec.group_by[by]
    table = spec.table
    rows = (
        await select(
            db,
            table,
            (*columns, table.time_column, *spec.measures),
            filters,
            since=starts[0],
            until=until,
            condition=spec.condition,
        )
        if query
        else []
    )
    # per group, per bucket: the calls as tuples of the measures
    groups: dict[tuple[str | None, ...], list[list[Any]]] = {}
    width = len(columns)
    for row in rows:
        index = _index(starts, bucket, table.moment(row[width]))
        if index is None:
            continue
        key = tuple(None if value is None else str(value) for value in row[:width])
        cells = groups.get(key)
        if cells is None:
            cells = groups[key] = [[] for _ in starts]
        cells[index].append(tuple(row[width + 1 :]))

    def weight(cells: list[list[Any]]) -> float:
        return sum(spec.weight(call) for cell in cells for call in cell)

    kept, folded = _fold(groups, weight)
    series = []
    for values, cells in kept:
        points = [spec.point(start, calls) for start, calls in zip(starts, cells, strict=True)]
        totals = spec.point(starts[0], [call for cell in cells for call in cell])
        del totals["t"]
        series.append({"key": dict(zip(names, values, strict=True)), "totals": totals, "points": points})
    return {
        "kind": spec.kind,
        "scope": dict(filters),
        "bucket": bucket,
        "by": by,
        "since": iso_utc(starts[0]),
        "until": iso_utc(until),
        "bucketCount": len(starts),
        "othersFolded": folded,
        "series": series,
    }


def _research_point(start: float, calls: list[tuple[Any, ...]]) -> dict[str, Any]:
    durations = sorted(int(duration) for _, _, duration in calls)
    return {
        "t": iso_utc(start),
        "calls": len(calls),
        "failures": sum(1 for ok, _, _ in calls if not ok),
        "hits": sum(int(hits) for _, hits, _ in calls),
        "p50Ms": percentile(durations, 0.50),
        "p95Ms": percentile(durations, 0.95),
    }


def _llm_point(start: float, calls: list[tuple[Any, ...]]) -> dict[str, Any]:
    tokens_in = sum(int(i) for i, _, _ in calls)
    tokens_out = sum(int(o) for _, o, _ in calls)
    costs = [c for _, _, c in calls]
    return {
        "t": iso_utc(start),
        "calls": len(calls),
        "tokensInput": tokens_in,
        "tokensOutput": tokens_out,
        "tokensTotal": tokens_in + tokens_out,
        "costUsd": usd_total(costs),
        "unpricedCalls": costs.count(None),
    }


RESEARCH: Final = SeriesSpec(
    kind="research",
    noun="research",
    table=RESEARCH_CALLS,
    group_by={"instance": (("instance_id",), ("instance",)), "modality": (("modality",), ("modality",))},
    measures=("ok", "hit_count", "duration_ms"),
    point=_research_point,
    weight=lambda call: 1.0,
)
LLM: Final = SeriesSpec(
    kind="llm",
    noun="LLM",
    table=LLM_USAGE,
    group_by={
        "project": (("project",), ("project",)),
        "account": (("account",), ("account",)),
        "model": (("instance", "model"), ("instance", "model")),
        "provider": (("provider",), ("provider",)),
    },
    measures=("tokens_input", "tokens_output", "cost_usd"),
    point=_llm_point,
    weight=lambda call: float(int(call[0]) + int(call[1])),
    # answered calls and those their client abandoned, charged what the upstream produced
    # (llm/settlement.py), as the dashboard counts them
    condition="outcome IN ('ok', 'cancelled')",
)
RESEARCH_BY: Final = tuple(RESEARCH.group_by)
LLM_BY: Final = tuple(LLM.group_by)


__all__ = [
    "LLM",
    "LLM_BY",
    "MAX_BUCKETS",
    "MAX_SERIES",
    "RESEARCH",
    "RESEARCH_BY",
    "SeriesSpec",
    "bucket_starts",
    "timeseries",
]

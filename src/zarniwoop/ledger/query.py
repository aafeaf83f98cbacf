"""The ledger's one query engine: every report — the search usage of `zarniwoop usage` and
`GET /v1/usage`, the LLM dashboard, the timeseries of the console's charts — reads the ledger
tables through `select`, and measures them with the helpers here.

    rows = await select(db, RESEARCH_CALLS, ("instance_id", "duration_ms"),
                        {"tenant": "acme", "project": "review"}, since=parse_since("24h"), until=now)
    percentile(sorted(ms for _, ms in rows), 0.95)   # nearest rank; None for no calls
    usd_total([0.1, 0.2])                             # 0.3, not 0.30000000000000004

Money is summed exactly: each stored cost is taken as the decimal it prints as and the sum is
rounded to the micro-dollar once, at the end.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..contract.errors import InvalidRequestError

if TYPE_CHECKING:
    from ..storage.db import Database
    from .tables import LedgerTable

_DURATION = re.compile(r"^(\d{1,12})\s*([mhdw])$")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
SINCE_PATTERN = r"^(\d{1,3}[mhdw]|[1-9]\d{3}-(0[1-9]|1[0-2])-(0[1-9]|1\d|2[0-8])(T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d)?Z?)?)$"
"""What `parse_since` takes, as the OpenAPI document states it (a subset: any duration within a
century, any ISO date): `24h`, `7d`, `30m`, `2w`, `2026-01-31`, `2026-01-31T08:00Z`."""
MAX_LOOKBACK_SECONDS = 100 * 366 * 86400
"""A century: further back than any audit row, and still a date every surface can print."""
MICRO_USD = Decimal("0.000001")


def parse_since(text: str, *, now: float | None = None) -> float:
    """`24h`, `7d`, `30m`, `2w`, or an ISO date/time (UTC unless it says otherwise) → epoch seconds."""
    current = time.time() if now is None else now
    value = text.strip().lower()
    match = _DURATION.match(value)
    if match:
        seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        if seconds > MAX_LOOKBACK_SECONDS:
            raise InvalidRequestError("since", f"{text.strip()!r} reaches back more than 100 years")
        return current - seconds
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequestError(
            "since", f"expected a duration like 24h, 7d, 30m or an ISO date, got {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


async def select(
    db: Database,
    table: LedgerTable,
    columns: Sequence[str],
    filters: Mapping[str, Any],
    *,
    since: float | None = None,
    until: float | None = None,
    condition: str = "",
    newest_first: bool = False,
    limit: int | None = None,
) -> list[Sequence[Any]]:
    """`columns` of `table`'s rows matching every filter (a `None` filter is not applied), the
    fixed SQL `condition`, and `since <= time < until` (epoch seconds, either end optional)."""
    where = [f"{column} = ?" for column, value in filters.items() if value is not None]
    params: list[Any] = [value for value in filters.values() if value is not None]
    if condition:
        where.append(condition)
    for bound, operator in ((since, ">="), (until, "<")):
        if bound is not None:
            where.append(f"{table.time_column} {operator} ?")
            params.append(table.bound(bound))
    sql = f"SELECT {', '.join(columns)} FROM {table.name}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    if newest_first:
        sql += f" ORDER BY {table.time_column} DESC"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return list(await db.fetchall(sql, params))


def percentile(sorted_values: list[int], fraction: float) -> int | None:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def usd_total(costs: Iterable[float | None]) -> float:
    """The exact sum of the priced costs (None: unpriced, left out), to the micro-dollar."""
    total = sum((Decimal(repr(float(cost))) for cost in costs if cost is not None), Decimal(0))
    return float(total.quantize(MICRO_USD))

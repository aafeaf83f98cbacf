"""The usage report of a scope: provider calls per instance and modality, from the audit log.

    report = await research_usage(db, dispatcher, SearchScope("acme", "review"), since=time.time() - 86400)
    report["rows"][0]  # {"instance": "openalex", "modality": "ACADEMIC", "calls": 12, "hits": 96,
                       #  "failures": 1, "p50Ms": 310, "p95Ms": 802, "quota": {...} | None, ...}

Backs `zarniwoop usage` and `GET /v1/usage` (the LLM side adds its own section next to it).
"""

from __future__ import annotations

import contextlib
import math
import re
import time
from collections import defaultdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..contract.enums import Modality
from ..contract.errors import InvalidRequestError
from ..limits.clock import iso_utc

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..dispatch.dispatcher import Dispatcher
    from ..storage.db import Database
    from ..storage.usage import ZarniwoopUsageCounter

_DURATION = re.compile(r"^(\d{1,12})\s*([mhdw])$")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
SINCE_PATTERN = r"^(\d{1,3}[mhdw]|[1-9]\d{3}-(0[1-9]|1[0-2])-(0[1-9]|1\d|2[0-8])(T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d)?Z?)?)$"
"""What `parse_since` takes, as the OpenAPI document states it (a subset: any duration within a
century, any ISO date): `24h`, `7d`, `30m`, `2w`, `2026-01-31`, `2026-01-31T08:00Z`."""
MAX_LOOKBACK_SECONDS = 100 * 366 * 86400
"""A century: further back than any audit row, and still a date every surface can print."""


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


def percentile(sorted_values: list[int], fraction: float) -> int | None:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


async def research_usage(
    db: Database,
    dispatcher: Dispatcher,
    scope: SearchScope,
    *,
    since: float,
    until: float | None = None,
    audit: ZarniwoopUsageCounter | None = None,
) -> dict[str, Any]:
    """Calls, hits, failures, p50/p95 latency and quota per instance and modality for a scope."""
    until = time.time() if until is None else until
    if audit is not None:
        # This process's latest calls belong in its own report; if the database cannot take them,
        # the report shows what it has (the counter logs the outage).
        with contextlib.suppress(Exception):
            await audit.flush(orphans=False)
    rows = await db.fetchall(
        "SELECT instance_id, protocol, modality, hit_count, ok, duration_ms FROM research_call_records "
        "WHERE tenant = ? AND project = ? AND started_at >= ? AND started_at < ?",
        (scope.tenant, scope.project, since, until),
    )
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    durations: dict[tuple[str, str], list[int]] = defaultdict(list)
    for instance_id, protocol, modality, hits, ok, duration_ms in rows:
        group = groups.setdefault(
            (instance_id, modality),
            {
                "instance": instance_id,
                "protocol": protocol,
                "modality": modality,
                "calls": 0,
                "hits": 0,
                "failures": 0,
            },
        )
        group["calls"] += 1
        group["hits"] += int(hits)
        group["failures"] += 0 if ok else 1
        durations[(instance_id, modality)].append(int(duration_ms))

    provider_set = await dispatcher.factory.providers(scope)
    quota = dispatcher.quota
    out_rows = []
    for key in sorted(groups):
        group = groups[key]
        ordered = sorted(durations[key])
        group["p50Ms"] = percentile(ordered, 0.50)
        group["p95Ms"] = percentile(ordered, 0.95)
        instance = provider_set.instances.get(group["instance"])
        status = None
        if quota is not None and instance is not None:
            status = await quota.status(scope, instance, Modality(group["modality"]))
        group["quota"] = status.to_json() if status else None
        out_rows.append(group)

    quotas = []
    if quota is not None:
        for instance in provider_set.instances.values():
            modality = min(instance.protocol.modalities, key=lambda m: m.value, default=None)
            if modality is None:
                continue
            status = await quota.status(scope, instance, modality)
            if status is not None:
                quotas.append({"instance": instance.id, "quota": status.to_json()})

    return {
        "scope": {"tenant": scope.tenant, "project": scope.project},
        "since": iso_utc(since),
        "until": iso_utc(until),
        "rows": out_rows,
        "totals": {
            "calls": sum(g["calls"] for g in out_rows),
            "hits": sum(g["hits"] for g in out_rows),
            "failures": sum(g["failures"] for g in out_rows),
        },
        "quotas": quotas,
    }

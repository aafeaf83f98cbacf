"""The two ledger tables, each described once: columns, time column, how a moment is stored,
how long rows are kept. Writers insert with `insert_sql`, the spool names a row by `name`, the
query engine (`ledger/query.py`) filters on `time_column` with `bound`, the retention job cuts on it.

    RESEARCH_CALLS.insert_sql   # "INSERT INTO research_call_records (id, …) VALUES (?, …) ON CONFLICT (id) DO NOTHING"
    LLM_USAGE.bound(1767225600.0)  # "2026-01-01T00:00:00.000+00:00", the form `created_at` is written in

Every INSERT is idempotent (`ON CONFLICT (id) DO NOTHING`): a spooled row may be replayed after it
was written.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from ..config import keys as K
from ..storage.db import value_rows


def iso_ms(epoch: float) -> str:
    """A moment as `llm_usage_records.created_at` holds it (ISO-8601 UTC, milliseconds), so that
    it compares with the stored text."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def iso_epoch(stored: Any) -> float:
    """A stored ISO-8601 moment as epoch seconds (UTC unless it says otherwise)."""
    moment = datetime.fromisoformat(str(stored).replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


@functools.cache
def _insert_sql(table: str, columns: tuple[str, ...], count: int) -> str:
    """The idempotent INSERT of `count` rows of a ledger table."""
    values = value_rows(count, len(columns))
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES {values} ON CONFLICT (id) DO NOTHING"


def _columns(names: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in names.split(","))


@dataclass(frozen=True, slots=True)
class LedgerTable:
    name: str
    """The table, and the name its rows carry through the spool."""
    columns: tuple[str, ...]
    time_column: str
    retention_key: str
    default_retention_days: int
    bound: Callable[[float], Any] = float
    """A moment (epoch seconds) in the form `time_column` stores it."""
    moment: Callable[[Any], float] = float
    """A stored `time_column` value as epoch seconds."""
    late: tuple[Any, ...] = ()
    """Defaults of the last columns, added after rows may have been spooled without them (migration
    0038: `usage_estimated`): a replayed row that is short gets them (`complete`)."""
    insert_sql: str = field(init=False)
    """The row's idempotent INSERT, built once (every LLM call runs it)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "insert_sql", _insert_sql(self.name, self.columns, 1))  # frozen: set once

    def insert_many_sql(self, count: int) -> str:
        """`insert_sql` for `count` rows at once."""
        return _insert_sql(self.name, self.columns, count)

    def complete(self, row: Sequence[Any]) -> tuple[Any, ...]:
        """A spooled row with every column: one spooled before the `late` columns existed gets their
        defaults."""
        missing = len(self.columns) - len(row)
        if 0 < missing <= len(self.late):
            return (*row, *self.late[len(self.late) - missing :])
        return tuple(row)


RESEARCH_CALLS: Final = LedgerTable(
    name="research_call_records",
    columns=_columns(
        "id, tenant, project, instance_id, protocol, modality, tier, query_hash, hit_count, ok, outcome, "
        "error_message, started_at, duration_ms, profile, trace_id"
    ),
    time_column="started_at",
    retention_key=K.LOG_RETENTION_DAYS,
    default_retention_days=30,
)
LLM_USAGE: Final = LedgerTable(
    name="llm_usage_records",
    columns=_columns(
        "id, tenant, account, project, team, session_id, think_process_id, node_id, provider, instance, model, "
        "purpose, tokens_input, tokens_output, tokens_total, cost_usd, credential_source, duration_ms, outcome, "
        "error, failover, attempts, created_at, usage_estimated"
    ),
    late=(False,),
    # `created_at` is ISO text written by `UsageRecord` (UTC, `+00:00`): compared as text with
    # bounds of the same form, parsed per row where a bucket needs it.
    time_column="created_at",
    retention_key="ai.usage.retentionDays",
    default_retention_days=90,
    bound=iso_ms,
    moment=iso_epoch,
)
TABLES: Final = {table.name: table for table in (RESEARCH_CALLS, LLM_USAGE)}
"""The ledgers the spool may carry rows of, by name."""

"""What search and LLM calls both need, in one floor under `dispatch/` and `llm/` (DESIGN §1).

| job | memory (one process) | SQL (embedded default, PostgreSQL) | Redis (replicas) | module |
|---|---|---|---|---|
| pacing: wait for a start slot (GCRA) | `LocalPacer` | `SQLPacer` | `RedisPacer` | pacing*.py |
| admission windows rpm/tpm: refuse | `LocalAdmissionWindows` | `SQLAdmissionWindows` | `RedisAdmissionWindows` | windows*.py |
| budgets: calls and tokens per level and period, reserve → settle / release, or spend | `MemoryBudgets` | `SQLBudgets` | `RedisBudgets` | budgets*.py |

Two kinds of budget read the one engine: `call_budgets` (a search provider's calls per day/month,
`SQLCallBudgets` / `RedisCallBudgets`) and `token_budgets` (an LLM call's lines at every level).

One clock (`Clock`: wall time for what processes share, monotonic for waits, injectable), one
Redis state (`RedisState`: client, key prefix, registered scripts). The outage policy of each —
pacing and windows fail open to the local form, call budgets fail to the last counts seen, token
budgets fail closed (`budgets.OUTAGE_POLICY`) — is written in docs/robustness.md and next to each class.

The Redis forms live in their own modules (`pacing_redis`, `windows_redis`, `budgets_redis`,
`redis_state`) and are imported where Redis is configured: Redis is the optional `scale` extra.

This package imports only `contract`, `observability`, `storage` (types) and `tenancy` (types).
"""

from __future__ import annotations

from .budgets import Budgets, Hold, LineStatus, QuotaLine
from .budgets_memory import MemoryBudgets
from .budgets_sql import SQLBudgets, SQLCallBudgets
from .call_budgets import BudgetWindow, CallBudgetKeeper, CallBudgets
from .clock import Clock, iso_utc, utc_date
from .pacing import LocalPacer, Pacer, pace_key, wait_for_slot
from .pacing_sql import SQLPacer
from .token_budgets import quota_lines
from .windows import AdmissionWindows, LocalAdmissionWindows, RateLine, RateTicket, rate_lines
from .windows_sql import SQLAdmissionWindows

__all__ = [
    "AdmissionWindows",
    "BudgetWindow",
    "Budgets",
    "CallBudgetKeeper",
    "CallBudgets",
    "Clock",
    "Hold",
    "LineStatus",
    "LocalAdmissionWindows",
    "LocalPacer",
    "MemoryBudgets",
    "Pacer",
    "QuotaLine",
    "RateLine",
    "RateTicket",
    "SQLAdmissionWindows",
    "SQLBudgets",
    "SQLCallBudgets",
    "SQLPacer",
    "iso_utc",
    "pace_key",
    "quota_lines",
    "rate_lines",
    "utc_date",
    "wait_for_slot",
]

"""What search and LLM calls both need, in one floor under `dispatch/` and `llm/` (DESIGN §1).

| job | memory (one process) | SQL (embedded default, PostgreSQL) | Redis (replicas) | module |
|---|---|---|---|---|
| pacing: wait for a start slot (GCRA) | `LocalPacer` | `SQLPacer` | `RedisPacer` | pacing*.py |
| admission windows rpm/tpm: refuse | `LocalAdmissionWindows` | `SQLAdmissionWindows` | `RedisAdmissionWindows` | windows*.py |
| call budgets per day/month | — | `SQLCallBudgets` | `RedisCallBudgets` | call_budgets.py |
| token budgets at every level | — | `SQLTokenBudgets` | `RedisTokenBudgets` | token_budgets*.py |

One clock (`Clock`: wall time for what processes share, monotonic for waits, injectable), one
Redis state (`RedisState`: client, key prefix, registered scripts). The outage policy of each —
pacing and windows fail open to the local form, call budgets fail to the last counts seen, token
budgets fail closed — is written in docs/robustness.md and next to each class.

The Redis forms live in their own modules (`pacing_redis`, `windows_redis`, `token_budgets_redis`,
`redis_state`) and are imported where Redis is configured: Redis is the optional `scale` extra.

This package imports only `contract`, `observability`, `storage` (types) and `tenancy` (types).
"""

from __future__ import annotations

from .call_budgets import BudgetWindow, CallBudgetKeeper, CallBudgets, RedisCallBudgets, SQLCallBudgets
from .clock import Clock, iso_utc, utc_date
from .pacing import LocalPacer, Pacer, pace_key, wait_for_slot
from .pacing_sql import SQLPacer
from .token_budgets import Hold, LineStatus, QuotaLine, SQLTokenBudgets, TokenBudgets, quota_lines
from .windows import AdmissionWindows, LocalAdmissionWindows, RateLine, RateTicket, rate_lines
from .windows_sql import SQLAdmissionWindows

__all__ = [
    "AdmissionWindows",
    "BudgetWindow",
    "CallBudgetKeeper",
    "CallBudgets",
    "Clock",
    "Hold",
    "LineStatus",
    "LocalAdmissionWindows",
    "LocalPacer",
    "Pacer",
    "QuotaLine",
    "RateLine",
    "RateTicket",
    "RedisCallBudgets",
    "SQLAdmissionWindows",
    "SQLCallBudgets",
    "SQLPacer",
    "SQLTokenBudgets",
    "TokenBudgets",
    "iso_utc",
    "pace_key",
    "quota_lines",
    "rate_lines",
    "utc_date",
    "wait_for_slot",
]

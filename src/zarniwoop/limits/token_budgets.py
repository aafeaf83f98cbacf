"""Token budgets: the lines of an LLM call, on the one budget engine (`budgets.py`) (seed 002 §3, §5).

A call's *quota lines* are one daily and one monthly line per level the call runs under
(account, project, team, tenant: `tenancy.levels.ORG_LEVELS`). Lines with a limit are checked;
every line is charged, so the dashboard shows usage at levels without a budget too ("53k / no
project limit").

    hold = await budgets.reserve("acme", quota_lines(scope), 12_000)   # all levels, or QuotaExceededError
    ... the call ...
    statuses = await budgets.settle(hold, 3_340)                         # release the hold, charge real usage

The error of a refused reservation names the first level over its cap in cascade order, "Project
quota exhausted". `settle` returns each limited line's charged usage after the call (what the
threshold notices read). Concurrent calls never overspend: a budget that fits 20 calls runs exactly 20.

Outage policy (`budgets.OUTAGE_POLICY`, docs/robustness.md): token budgets fail closed. A `reserve`
that cannot reach the store raises `BudgetUnavailableError` (a `QuotaExceededError`: only the
unlimited local candidates may still serve; exit 4); a `settle` or `release` that cannot reach it
is logged once and dropped (the call already happened; its usage record still has it, and its
hold lapses after `HOLD_TTL_SECONDS`); `status` then reports nothing (no light-model switch on
unknown numbers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..tenancy.levels import ORG_LEVELS
from .budgets import (
    HOLD_TTL_SECONDS,
    PERIODS,
    Hold,
    LineStatus,
    QuotaLine,
    buckets_for,
    exhausted_error,
    unavailable_error,
)

if TYPE_CHECKING:
    from ..tenancy.accounts import CallScope


def quota_lines(scope: CallScope) -> list[QuotaLine]:
    """Two lines (daily, monthly) per level of the call, limits from each level's `quota`."""
    lines = []
    for level, owner, unit in scope.levels():
        quota = unit.llm.quota if unit is not None else None
        for period in PERIODS:
            limit = None
            if quota is not None:
                limit = quota.daily_tokens if period == "daily" else quota.monthly_tokens
            if quota is not None:
                lines.append(
                    QuotaLine(level, owner, period, limit, quota.notify_pct, quota.light_pct, quota.block_pct)
                )
            else:
                lines.append(QuotaLine(level, owner, period, None))
    return lines


def max_tokens_cap(scope: CallScope) -> int | None:
    """The smallest `max_tokens_per_call` of any level (every level's limit holds)."""
    caps = [
        cfg.quota.max_tokens_per_call
        for cfg in (scope.config(level) for level in ORG_LEVELS)
        if cfg is not None and cfg.quota is not None and cfg.quota.max_tokens_per_call
    ]
    return min(caps) if caps else None


__all__ = [
    "HOLD_TTL_SECONDS",
    "Hold",
    "LineStatus",
    "QuotaLine",
    "buckets_for",
    "exhausted_error",
    "max_tokens_cap",
    "quota_lines",
    "unavailable_error",
]

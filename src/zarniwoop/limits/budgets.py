"""The one budget engine: calls and tokens, per level and period, reserved before and settled after.

A budget is a set of *lines*: one per level (account, project, team, tenant — or, for a search
provider's calls, the scope that owns the budget) and period. Every line is charged; lines with a
limit are checked. The unit is a token (LLM calls) or a call (search calls: a call is one unit).

    hold = await budgets.reserve("acme", lines, 12_000)     # every limited line, or QuotaExceededError
    ... the call ...
    statuses = await budgets.settle(hold, 3_340)             # release the hold, charge the real amount
    await budgets.release(hold)                              # (or: a failed attempt gives it back)
    statuses = await budgets.spend("acme", lines, 1)         # reserve and settle at once

`spend` is for a unit billed the moment it is sent (a search call: no later figure replaces it).
`reserve` and `spend` are all-or-nothing across lines: a line passes when its charged usage plus
the amounts other calls hold plus this amount stays within its cap, so concurrent calls never
overspend — a budget is never passed by more than one reservation's estimate. The error names the
first line over its cap, in the order given ("Project quota exhausted"). Holds expire, so a
crashed process's amounts come back by themselves.

Periods: `daily` and `monthly` (UTC). The older spelling `day` / `month` (search quotas,
`research_providers`) is mapped at the edges by `period_named`; the stored and computed periods
are only these two. Three forms: `budgets_memory.MemoryBudgets` (one process), `budgets_sql.SQLBudgets`
(SQLite/PostgreSQL), `budgets_redis.RedisBudgets` (replicas).

Outage policy per unit, the table `OUTAGE_POLICY` (docs/robustness.md): a store that cannot be
reached makes `reserve`/`spend` raise `BudgetUnavailableError` (fail closed); `settle`, `release`
and `status` log once and give nothing back. Call budgets wrap that in `call_budgets.CallBudgetKeeper`
(fail to the last counts seen).
"""

from __future__ import annotations

import functools
import logging
import secrets
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Literal

from ..contract.errors import BudgetUnavailableError, QuotaExceededError
from ..observability.outage import OutageLog
from .clock import Clock
from .revocation import TokenCheck, confirm_live, hold_beside_check

PERIODS = ("daily", "monthly")
_SPELLINGS = {"daily": "daily", "monthly": "monthly", "day": "daily", "month": "monthly"}
EDGE_SPELLING = {"daily": "day", "monthly": "month"}
"""The search side's spelling of a period (`research_providers` quota, `quota_counters` rows)."""

Unit = Literal["tokens", "calls"]
OUTAGE_POLICY: Mapping[str, str] = {
    "tokens": "fail closed: reserve refuses (BudgetUnavailableError); settle/release dropped, holds lapse",
    "calls": "last counts seen: each process enforces them plus its own calls, charged when back",
}
"""What a budget of each unit does while its store is unreachable (docs/robustness.md)."""

HOLD_TTL_SECONDS = 900.0
"""A hold outliving this is a crashed call; its amount counts again after it."""
EXPIRY_GRACE_SECONDS = 3600
"""How long a Redis counter outlives its period (clock skew between replicas)."""


class _SilentOutage(OutageLog):
    """The outage log of a store whose caller reports its outages itself (the call budgets' keeper)."""

    def failed(self, exc: BaseException, consequence: str) -> None:
        return None

    def recovered(self, detail: str = "") -> None:
        return None


def outage_log(logger: logging.Logger, store: str, what: str | None) -> OutageLog:
    """`Redis (token budgets)`: the one ERROR of an outage names the store and the budgets; with
    `what` None the store stays silent and its caller reports."""
    return OutageLog(logger, f"{store} ({what})") if what else _SilentOutage(logger, store)


def period_named(spelling: str) -> str:
    """`daily`/`monthly` for either spelling; a ValueError naming the period for anything else."""
    try:
        return _SPELLINGS[spelling]
    except KeyError:
        raise ValueError(f"unknown budget period {spelling!r}: expected daily or monthly") from None


@dataclass(frozen=True, slots=True)
class Bucket:
    """One period's current window: `2026-04-23` (daily) or `2026-04` (monthly), until `resets_at`."""

    period: str
    start: str
    resets_at: float


@functools.lru_cache(maxsize=8)
def _buckets_of(day: date) -> tuple[Bucket, Bucket]:
    """Formatted once per day, not twice per call (`strftime` showed in the gateway's profile)."""
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    month_end = datetime(day.year + day.month // 12, day.month % 12 + 1, 1, tzinfo=UTC)
    return (
        Bucket("daily", day.strftime("%Y-%m-%d"), start.timestamp() + 86400),
        Bucket("monthly", day.strftime("%Y-%m"), month_end.timestamp()),
    )


BucketChoice = Mapping[str, Bucket] | None
"""The bucket per period a call counts in; None: the periods containing now."""


def current_buckets(now: float) -> dict[str, Bucket]:
    """Each period's bucket containing the epoch `now`."""
    daily, monthly = _buckets_of(datetime.fromtimestamp(now, UTC).date())
    return {"daily": daily, "monthly": monthly}


def bucket_named(period: str, start: str) -> Bucket:
    """The bucket that starts at `start` (`2026-04-23` daily, `2026-04` monthly)."""
    day = date.fromisoformat(start if period == "daily" else start + "-01")
    return _buckets_of(day)[PERIODS.index(period)]


def buckets_for(now: datetime) -> tuple[tuple[str, str], ...]:
    """`(period, bucket start)` of each period containing `now` (the dashboard's labels)."""
    return tuple((b.period, b.start) for b in _buckets_of(now.astimezone(UTC).date()))


@dataclass(frozen=True, slots=True)
class QuotaLine:
    """One line of a budget: whose (level, owner; `tenant` when it is not the call's), which period,
    how big. `subject` narrows it to one thing the units go to (a search provider instance)."""

    level: str
    owner: str
    period: str
    limit: int | None
    notify_pct: int = 80
    light_pct: int = 95
    block_pct: int = 100
    unit: Unit = "tokens"
    subject: str = ""
    tenant: str = ""

    @property
    def cap(self) -> int | None:
        """Units that may be used before calls are refused (the limit × block threshold)."""
        return None if self.limit is None else self.limit * self.block_pct // 100

    @property
    def label(self) -> str:
        return f"{self.level}/{self.owner}"


@dataclass(frozen=True, slots=True)
class LineStatus:
    line: QuotaLine
    bucket: str
    used: int
    held: int = 0

    @property
    def percent(self) -> float | None:
        if not self.line.limit:
            return None
        return 100.0 * self.used / self.line.limit

    @property
    def exhausted(self) -> bool:
        cap = self.line.cap
        return cap is not None and self.used >= cap

    def to_json(self) -> dict[str, object]:
        pct = self.percent
        return {
            "scope": self.line.label,
            "level": self.line.level,
            "owner": self.line.owner,
            "period": self.line.period,
            "bucket": self.bucket,
            "tokensUsed": self.used,
            "tokensHeld": self.held,
            "tokensLimit": self.line.limit,
            "percent": None if pct is None else round(pct, 2),
            # where the notice, the light-model switch and the block happen (percent of the limit)
            "thresholds": {
                "notify": self.line.notify_pct,
                "light": self.line.light_pct,
                "block": self.line.block_pct,
            },
        }


@dataclass(frozen=True, slots=True)
class Hold:
    id: str
    tenant: str
    lines: tuple[QuotaLine, ...]
    buckets: tuple[Bucket, ...]
    """The buckets at reservation time: a call crossing midnight is charged to the day it started."""
    amount: int
    by_period: Mapping[str, Bucket] = field(default_factory=dict, compare=False, repr=False)
    """`buckets` by period: a call asks for a line's bucket some forty times (a dict, not a scan)."""

    def __post_init__(self) -> None:
        if not self.by_period:
            object.__setattr__(self, "by_period", {b.period: b for b in self.buckets})

    def bucket(self, period: str) -> str:
        return self.by_period[period].start

    def window(self, period: str) -> Bucket:
        return self.by_period[period]


def new_hold(
    tenant: str, lines: Sequence[QuotaLine], amount: int, now: float, buckets: Mapping[str, Bucket] | None
) -> Hold:
    """A hold on `lines` in the given buckets (default: the periods containing `now`)."""
    chosen = buckets or current_buckets(now)
    return Hold(secrets.token_hex(8), tenant, tuple(lines), tuple(chosen.values()), amount)


def line_tenant(tenant: str, line: QuotaLine) -> str:
    """The tenant whose counter a line is: its own (a shared pool's) or the call's."""
    return line.tenant or tenant


def check_room(statuses: Sequence[LineStatus], amount: int) -> None:
    """Refuse (the first line in order) when one would pass its cap with `amount` more."""
    for status in statuses:
        cap = status.line.cap
        if cap is not None and status.used + status.held + amount > cap:
            raise exhausted_error(status, amount)


def exhausted_error(status: LineStatus, needed: int) -> QuotaExceededError:
    line = status.line
    return QuotaExceededError(
        line.level,
        f"{line.level.capitalize()} quota exhausted: {line.label} {line.period} "
        f"{status.used + status.held:,} of {line.limit or 0:,} {line.unit} used, this call needs up to {needed:,}",
    )


def unavailable_error(lines: Sequence[QuotaLine], exc: BaseException, store: str) -> BudgetUnavailableError:
    """The fail-closed refusal of a reservation whose store is unreachable (the first limited level)."""
    limited = next((line for line in lines if line.limit is not None), None)
    level = limited.level if limited else "budget"
    unit = limited.unit[:-1] if limited else "token"
    return BudgetUnavailableError(
        level,
        f"{level.capitalize()} budget unavailable: {store} unreachable ({type(exc).__name__}); calls under "
        f"a {unit} budget are refused until it is back ({unit} budgets fail closed)",
    )


class Budgets(ABC):
    """The one budget engine; `MemoryBudgets`, `SQLBudgets` and `RedisBudgets` are its three forms.
    What they share is written here, over each form's two primitives (`_hold`: record a checked hold
    on the limited lines; `_spend`: check and charge every line at once)."""

    clock: Clock
    token_check: TokenCheck | None = None
    """Whether a token id is unrevoked, for a form whose store has no `tokens` table (Redis)."""

    async def reserve(
        self,
        tenant: str,
        lines: Sequence[QuotaLine],
        amount: int,
        *,
        buckets: BucketChoice = None,
        token: str | None = None,
    ) -> Hold:
        """Hold `amount` on every line, or raise QuotaExceededError when a limited line has no room;
        with `token` (an API token's id) also `RevokedTokenError` if revoked, none held (`revocation.py`)."""
        hold = new_hold(tenant, lines, amount, self.clock.now(), buckets)
        limited = [line for line in lines if line.limit is not None]
        if limited:
            await (self._hold(hold, limited) if token is None else self._hold_live(hold, limited, token))
        elif token is not None:
            await confirm_live(self.token_check, token)
        return hold

    async def _hold_live(self, hold: Hold, limited: Sequence[QuotaLine], token: str) -> None:
        """`_hold` beside the token's check (`SQLBudgets` makes both one statement)."""
        await hold_beside_check(self._hold(hold, limited), self.token_check, token, self.release, hold)

    async def spend(
        self,
        tenant: str,
        lines: Sequence[QuotaLine],
        amount: int,
        *,
        buckets: BucketChoice = None,
    ) -> list[LineStatus]:
        """Reserve and settle at once (all or none): each line's usage after it, in order."""
        return await self._spend(new_hold(tenant, lines, amount, self.clock.now(), buckets))

    @abstractmethod
    async def settle(self, hold: Hold, amount: int) -> list[LineStatus]:
        """Release the hold and charge the real amount: each limited line's usage after it."""

    async def settle_many(self, settles: Sequence[tuple[Hold, int]]) -> list[list[LineStatus]]:
        """`settle` for several holds at once, in order (the gateway's group commit): each one's
        statuses as if they had been settled one after another. Here one after another; a form
        that can write them at once does (`SQLBudgets`)."""
        return [await self.settle(hold, amount) for hold, amount in settles]

    @abstractmethod
    async def release(self, hold: Hold) -> None:
        """A failed attempt gives its hold back."""

    @abstractmethod
    async def status(
        self, tenant: str, lines: Sequence[QuotaLine], *, buckets: BucketChoice = None
    ) -> list[LineStatus]:
        """Each line's usage and holds now, in order."""

    @abstractmethod
    async def mark_alert(self, tenant: str, status: LineStatus, threshold: int) -> bool:
        """Record that `threshold` % was announced for this line and bucket; False if it already was."""

    @abstractmethod
    async def charge(
        self, tenant: str, line: QuotaLine, amount: int, *, bucket: str | Bucket | None = None
    ) -> None:
        """Add usage without a check (imports, tests, units spent while the store was away)."""

    @abstractmethod
    async def _hold(self, hold: Hold, limited: Sequence[QuotaLine]) -> None: ...

    @abstractmethod
    async def _spend(self, hold: Hold) -> list[LineStatus]: ...


CounterKey = tuple[str, str, str, str, str, str, str]
"""(tenant, unit, level, owner, subject, period, bucket): one counter."""


def counter_key(tenant: str, line: QuotaLine, bucket: str) -> CounterKey:
    return (line_tenant(tenant, line), line.unit, line.level, line.owner, line.subject, line.period, bucket)


def bucket_of(line: QuotaLine, bucket: str | Bucket | None, now: float) -> Bucket:
    """The bucket a direct charge goes to: the one given (or named), else the current one."""
    if isinstance(bucket, Bucket):
        return bucket
    return bucket_named(line.period, bucket) if bucket else current_buckets(now)[line.period]


__all__ = [
    "EDGE_SPELLING",
    "HOLD_TTL_SECONDS",
    "OUTAGE_POLICY",
    "PERIODS",
    "Bucket",
    "Budgets",
    "Hold",
    "LineStatus",
    "QuotaLine",
    "buckets_for",
    "check_room",
    "current_buckets",
    "exhausted_error",
    "period_named",
    "unavailable_error",
]

"""One table of bounds for every numeric setting, and the shape every API key must have.

A value outside its bounds is refused at start-up (and by `settings set`) naming the key, instead
of misbehaving at the first search: `timeoutMs: -5` made every call time out at once,
`research.deadlineMs: 0` made every search fail, `rateLimit.perSecond: -1` turned pacing off.

    research.deadlineMs                        1 … 600000 ms
    research.endpoint.<id>.timeoutMs           1 … 600000 ms
    research.endpoint.<id>.rateLimit.perSecond 0 … 100000 calls/s (0 = no pacing)
    …                                          (see BOUNDS)

`ai.call.timeoutMs`, `ai.usage.retentionDays` and `ai.failover.maxWaitSeconds` are checked with the
other LLM settings (`llm/settings_check.py`).

API keys travel in HTTP headers, which carry ASCII only: a key with other characters (a typo'd
paste, a smart quote) is refused naming the key, rather than failing every search later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..contract.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Bound:
    """The accepted range of the keys `pattern` matches (whole numbers unless `fractional`)."""

    pattern: re.Pattern[str]
    low: float
    high: float
    unit: str
    fractional: bool = False

    def check(self, key: str, raw: str) -> ConfigError | None:
        try:
            value = float(raw) if self.fractional else int(raw.strip())
        except ValueError:
            kind = "a number" if self.fractional else "a whole number"
            return ConfigError(key, f"expected {kind} of {self.unit}, got {raw!r}")
        if not self.low <= value <= self.high:  # NaN fails this too
            low, high = _number(self.low), _number(self.high)
            return ConfigError(key, f"must be between {low} and {high} {self.unit}, got {raw.strip()}")
        return None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _bound(pattern: str, low: float, high: float, unit: str, *, fractional: bool = False) -> Bound:
    return Bound(re.compile(pattern), low, high, unit, fractional)


_ENDPOINT = r"^research\.endpoint\..+\."
DAY = 86400
BOUNDS: tuple[Bound, ...] = (
    _bound(r"^research\.deadlineMs$", 1, 600_000, "ms"),
    _bound(_ENDPOINT + r"timeoutMs$", 1, 600_000, "ms"),
    _bound(_ENDPOINT + r"rateLimit\.perSecond$", 0, 100_000, "calls per second", fractional=True),
    _bound(_ENDPOINT + r"rateLimit\.burst$", 1, 100_000, "calls in one second", fractional=True),
    _bound(_ENDPOINT + r"quota\.(daily|monthly)$", 0, 10**12, "calls"),
    _bound(r"^research\.hedge\.afterMs$", 0, 600_000, "ms"),
    _bound(r"^research\.cache\.ttlSeconds(\.\w+)?$", 0, 366 * DAY, "seconds"),
    _bound(r"^research\.factory\.cache\.ttlMinutes$", 0, 7 * 24 * 60, "minutes"),
    _bound(r"^research\.quota\.cache\.ttlMinutes$", 0, 24 * 60, "minutes"),
    _bound(r"^research\.log\.retentionDays$", 1, 36_500, "days"),
    _bound(r"^research\.content\.maxBytes$", 1, 1 << 30, "bytes"),
    _bound(r"^research\.investigate\.minHits$", 0, 1000, "hits"),
    _bound(r"^research\.tasks\.ttlSeconds$", 60, 30 * DAY, "seconds"),
    _bound(r"^research\.tasks\.leaseSeconds$", 1, 3600, "seconds"),
    _bound(r"^ai\.discovery\.timeoutMs$", 1, 600_000, "ms"),
    _bound(r"^ai\.catalog\.refreshMinutes$", 0, 7 * 24 * 60, "minutes"),
    _bound(r"^auth\.registration\.perAddressPerHour$", 1, 100_000, "registrations an hour"),
    _bound(r"^auth\.registration\.maxUnusedClients$", 1, 10_000_000, "clients"),
)


def bound_for(key: str) -> Bound | None:
    return next((b for b in BOUNDS if b.pattern.match(key)), None)


def check_bounds(key: str, raw: str | None) -> ConfigError | None:
    """The problem with a numeric setting's value, or None (also for keys without bounds)."""
    bound = bound_for(key)
    if bound is None or raw is None or raw.strip() == "":
        return None
    return bound.check(key, raw)


_KEY_CHARS = re.compile(r"^[\x21-\x7e]+$")
"""Printable ASCII without spaces: what an HTTP header (or a query parameter) can carry as is."""


def check_api_key(where: str, key: str) -> ConfigError | None:
    """Refuse a key an HTTP header cannot carry; the message never quotes the key."""
    if _KEY_CHARS.match(key):
        return None
    bad = next((c for c in key if not ("\x21" <= c <= "\x7e")), " ")
    what = "a space" if bad == " " else "a control character" if ord(bad) < 32 else f"U+{ord(bad):04X}"
    return ConfigError(where, f"API key contains {what}; keys are printable ASCII without spaces")

"""The operator's limits are a ceiling on the operator's key (issue 25 item 8).

An endpoint that calls the operator's own key (an environment variable such as `SERPER_API_KEY`,
or an `.apiKey` the operator set at system level) spends the operator's money. On such an endpoint
a tenant or a project may *lower* the call budgets and the pace — `quota.daily`, `quota.monthly`,
`rateLimit.perSecond`, `rateLimit.burst` — never raise them:

- at write time (`validate_scope`, so `settings set`, `PUT /v1/settings` and the config file alike)
  a tenant or project value above the operator's is refused, naming the key and the operator's
  value (a pace of 0, "no pacing", is the highest of all);
- at request time the effective limit is the minimum over the levels: every level's `quota.*` is
  a budget of its own pool, all reserved together (`dispatch/quota.py`), and the pace is the
  slowest one set (`operator_rate`).

An endpoint on the tenant's own key (its `.apiKey`, a credential) keeps the innermost-wins rule.

    research.endpoint.srp.quota.daily: 3                 # system level, the operator's Serper key
    acme: research.endpoint.srp.quota.daily: 100000      # refused: 422 naming the key and "3"
    acme: research.endpoint.srp.quota.daily: 2           # allowed: 2 calls a day for acme
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..contract.errors import ConfigError
from . import keys as K
from .trust import OPERATOR_LEVELS

if TYPE_CHECKING:
    from ..contract.protocol import InstanceConfig
    from .settings import ScopedSettings, SettingRow

CEILING_SUFFIXES = ("quota.daily", "quota.monthly", K.SUFFIX_RATE, K.SUFFIX_BURST)


def operator_funded(settings: ScopedSettings, instance_id: str, key_source: str | None) -> bool:
    """Whether the endpoint's calls in this scope spend the operator's key."""
    if key_source is None:
        return False
    if key_source.startswith("env:"):
        return True
    if key_source == "setting":
        row = settings.row(K.endpoint_key(instance_id, K.SUFFIX_API_KEY))
        return row is not None and row.level in OPERATOR_LEVELS
    return False


def operator_rows(settings: ScopedSettings, key: str) -> tuple[SettingRow, ...]:
    return tuple(r for r in settings.levels(key) if r.level in OPERATOR_LEVELS)


def _number(row: SettingRow) -> float | None:
    try:
        return float(row.value)
    except ValueError:
        return None  # the type check names the key


def _limit(suffix: str, value: float) -> float:
    """A comparable size of a limit: a pace or burst of 0 means none at all (no pacing)."""
    return float("inf") if suffix.startswith("rateLimit.") and value <= 0 else value


def operator_rate(
    settings: ScopedSettings, instance_id: str, suffix: str, default: float | None
) -> float | None:
    """The pace (or burst) on the operator's key: the slowest one any level set, the operator's own
    being its value at system level or, unset, the protocol's documented `default`."""
    key = K.endpoint_key(instance_id, suffix)
    values = [v for r in settings.levels(key) if (v := _number(r)) is not None]
    if not operator_rows(settings, key) and default is not None:
        values.append(default)
    limited = [v for v in values if v > 0]
    if limited:
        return min(limited)
    return values[-1] if values else default


def ceiling_problems(
    settings: ScopedSettings, config: InstanceConfig, default_rate: float | None
) -> list[ConfigError]:
    """A tenant or project value that raises the operator's limit on the operator's key."""
    if not operator_funded(settings, config.instance_id, config.key_source):
        return []
    errors = []
    for suffix in CEILING_SUFFIXES:
        key = K.endpoint_key(config.instance_id, suffix)
        rows = settings.levels(key)
        ceiling_rows = [r for r in rows if r.level in OPERATOR_LEVELS]
        ceiling = _number(ceiling_rows[-1]) if ceiling_rows else None
        if ceiling is None and suffix == K.SUFFIX_RATE:
            ceiling = default_rate
        if ceiling is None:
            continue
        for row in rows:
            value = _number(row)
            if row.level in OPERATOR_LEVELS or value is None:
                continue
            if _limit(suffix, value) > _limit(suffix, ceiling):
                shown = f"{ceiling:g}" + (" (no pacing)" if _limit(suffix, ceiling) == float("inf") else "")
                errors.append(
                    ConfigError(
                        key,
                        f"the operator's limit on the operator's key is {shown}; a {row.level} may lower it,"
                        f" not raise it to {row.value}",
                    )
                )
    return errors


__all__ = ["CEILING_SUFFIXES", "ceiling_problems", "operator_funded", "operator_rate"]

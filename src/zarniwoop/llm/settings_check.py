"""Boot checks of the settings the LLM call path reads, so a typo fails start-up (exit 2) and not
the first call. Checked in every scope that has settings:

    ai.operatorKeys          allow | deny
    ai.quota.webhookUrl      an http(s) URL
    ai.trace.persist         true | false
    ai.call.timeoutMs        a positive integer
    ai.usage.retentionDays   a positive integer
    ai.failover.maxWaitSeconds  a non-negative number
    ai.substitute            true | false
    ai.provider.<id>.traceparent   true | false
    ai.rateLimit.windowSeconds, ai.usage.purgeIntervalSeconds   a positive number
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config.validate import scope_problems
from ..contract.errors import ConfigError

if TYPE_CHECKING:
    from ..config.settings import ScopedSettings, SettingService


def _check(settings: ScopedSettings) -> list[ConfigError]:
    errors: list[ConfigError] = []
    mode = settings.get("ai.operatorKeys")
    if mode is not None and mode.strip().lower() not in ("allow", "deny"):
        errors.append(ConfigError("ai.operatorKeys", f"expected allow or deny, got {mode!r}"))
    url = settings.get("ai.quota.webhookUrl")
    if url and not url.startswith(("http://", "https://")):
        errors.append(ConfigError("ai.quota.webhookUrl", f"expected an http(s) URL, got {url!r}"))
    for key, minimum in (("ai.call.timeoutMs", 1), ("ai.usage.retentionDays", 1)):
        try:
            if settings.get_int(key, minimum) < minimum:
                errors.append(ConfigError(key, f"expected an integer ≥ {minimum}"))
        except ConfigError as exc:
            errors.append(exc)
    for key in ("ai.rateLimit.windowSeconds", "ai.usage.purgeIntervalSeconds"):
        try:
            value = settings.get_float(key, 1.0)
            if value is not None and value <= 0:
                errors.append(ConfigError(key, "expected a number > 0 (seconds)"))
        except ConfigError as exc:
            errors.append(exc)
    for key in settings:
        if key.startswith("ai.provider.") and key.endswith(".traceparent"):
            try:
                settings.get_bool(key, False)
            except ConfigError as exc:
                errors.append(exc)
    try:
        settings.get_bool("ai.trace.persist", False)
        settings.get_bool("ai.substitute", False)
        wait = settings.get_float("ai.failover.maxWaitSeconds", 0.0)
        if wait is not None and wait < 0:
            errors.append(ConfigError("ai.failover.maxWaitSeconds", "expected a number ≥ 0"))
    except ConfigError as exc:
        errors.append(exc)
    return errors


def check_llm_settings(service: SettingService) -> list[ConfigError]:
    """Every problem, once per key (the outermost scope that has it)."""
    return scope_problems(service, _check)

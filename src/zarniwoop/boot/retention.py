"""What the one retention job deletes, and how often a server runs it, from the settings."""

from __future__ import annotations

import logging

from ..config import keys as K
from ..config.settings import SettingService
from ..contract.errors import ConfigError
from ..contract.query import SearchScope
from ..storage.retention import RetentionRule, iso_bound
from ..storage.usage import DEFAULT_RETENTION_DAYS, QUOTA_COUNTER_KEEP_DAYS

log = logging.getLogger(__name__)


def retention_days(settings: SettingService, scope: SearchScope) -> int:
    """`research.log.retentionDays` for a scope; a bad value keeps the default rather than everything."""
    try:
        days = settings.scoped(scope).get_int(K.LOG_RETENTION_DAYS, DEFAULT_RETENTION_DAYS)
    except ConfigError:
        log.warning(
            "%s is not a number; keeping audit records %d days", K.LOG_RETENTION_DAYS, DEFAULT_RETENTION_DAYS
        )
        return DEFAULT_RETENTION_DAYS
    return max(1, days)


def retention_rules(settings: SettingService) -> list[RetentionRule]:
    """What the one retention job deletes, with the days the settings give (read at each run):
    provider calls per scope (`research.log.retentionDays`, 30), LLM usage and its traces
    (`ai.usage.retentionDays`, system-wide, 90), quota windows past two months."""
    from ..llm.usage import DEFAULT_RETENTION_DAYS as LLM_DAYS
    from ..llm.usage import RETENTION_KEY as LLM_KEY

    def llm_days(_: SearchScope) -> int:
        return settings.scoped(SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL)).get_int(LLM_KEY, LLM_DAYS)

    return [
        RetentionRule(
            "research_call_records",
            "started_at",
            days=lambda scope: retention_days(settings, scope),
            per_scope=True,
        ),
        RetentionRule(
            "llm_usage_records", "created_at", days=llm_days, bound=iso_bound, companions=("llm_traces",)
        ),
        RetentionRule("llm_quota_usage", "updated_at", days=lambda _: QUOTA_COUNTER_KEEP_DAYS),
    ]


def retention_interval(settings: SettingService) -> float:
    """How often a server runs the retention job (`ai.usage.purgeIntervalSeconds`, default an hour)."""
    system = settings.scoped(SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL))
    return system.get_float(K.RETENTION_INTERVAL_SECONDS, 3600.0) or 3600.0

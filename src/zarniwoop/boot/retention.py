"""What the one retention job deletes, and how often a server runs it, from the settings."""

from __future__ import annotations

import logging

from ..config import keys as K
from ..config.settings import SettingService
from ..contract.errors import ConfigError
from ..contract.query import SearchScope
from ..ledger import LLM_USAGE, RESEARCH_CALLS
from ..storage import responses
from ..storage.retention import QUOTA_COUNTER_KEEP_DAYS, RetentionRule, iso_bound
from ..tasks.store import TABLE as TASKS

log = logging.getLogger(__name__)
UNUSED_CLIENT_DAYS = 1
"""A registered OAuth client that got no token within a day is deleted (it registers again)."""


def retention_days(settings: SettingService, scope: SearchScope) -> int:
    """`research.log.retentionDays` for a scope; a bad value keeps the default rather than everything."""
    key, keep = RESEARCH_CALLS.retention_key, RESEARCH_CALLS.default_retention_days
    try:
        days = settings.scoped(scope).get_int(key, keep)
    except ConfigError:
        log.warning("%s is not a number; keeping audit records %d days", key, keep)
        return keep
    return max(1, days)


def retention_rules(settings: SettingService) -> list[RetentionRule]:
    """What the one retention job deletes, with the days the settings give (read at each run):
    provider calls per scope (`research.log.retentionDays`, 30), LLM usage and its traces
    (`ai.usage.retentionDays`, system-wide, 90), quota windows past two months, stored responses
    of `/v1/responses` (`ai.responses.retentionDays`, system-wide, 30), tasks past their expiry
    (`research.tasks.ttlSeconds` after they were made or ended; their steps go with them); the
    built-in OAuth server's sign-in requests, codes and refresh tokens once expired, and clients
    that never got a token a day after they registered (issue 45: unauthenticated rows never pile up)."""

    def llm_days(_: SearchScope) -> int:
        system = settings.scoped(SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL))
        return system.get_int(LLM_USAGE.retention_key, LLM_USAGE.default_retention_days)

    def response_days(_: SearchScope) -> int:
        system = settings.scoped(SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL))
        return system.get_int(responses.RETENTION_KEY, responses.DEFAULT_RETENTION_DAYS)

    return [
        RetentionRule(
            RESEARCH_CALLS.name,
            RESEARCH_CALLS.time_column,
            days=lambda scope: retention_days(settings, scope),
            per_scope=True,
        ),
        RetentionRule(
            LLM_USAGE.name, LLM_USAGE.time_column, days=llm_days, bound=iso_bound, companions=("llm_traces",)
        ),
        RetentionRule("llm_quota_usage", "updated_at", days=lambda _: QUOTA_COUNTER_KEEP_DAYS),
        RetentionRule(responses.TABLE, responses.TIME_COLUMN, days=response_days),
        RetentionRule(TASKS, "expires_at", days=lambda _: 0, expiry=True),
        *(
            RetentionRule(table, "expires_at", days=lambda _: 0, expiry=True)
            for table in ("oauth_requests", "oauth_codes", "oauth_refresh_tokens")
        ),
        RetentionRule(
            "oauth_clients", "created_at", days=lambda _: UNUSED_CLIENT_DAYS, where="used_at IS NULL"
        ),
    ]


def retention_interval(settings: SettingService) -> float:
    """How often a server runs the retention job (`ai.usage.purgeIntervalSeconds`, default an hour)."""
    system = settings.scoped(SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL))
    return system.get_float(K.RETENTION_INTERVAL_SECONDS, 3600.0) or 3600.0

"""Setting keys: one source of truth for the factory, the dispatcher, the tools and validation."""

from __future__ import annotations

import re

from ..contract.enums import Modality

SYSTEM_TENANT = "_system"
TENANT_LEVEL = "_tenant"
"""Project name that stands for "the whole tenant" in a scope."""

ENDPOINT_PREFIX = "research.endpoint."
DEADLINE_MS = "research.deadlineMs"
CACHE_TTL_SECONDS = "research.cache.ttlSeconds"
CACHE_MAX_BYTES = "research.cache.maxBytes"
HEDGE_AFTER_MS = "research.hedge.afterMs"
TRACE_CONTENT = "observability.traces.content"
"""Per scope: queries, prompts and completions in trace spans (default false: the query's SHA-256 only)."""
PROVENANCE = "research.provenance"
OPERATOR_KEYS = "research.operatorKeys"
OPERATOR_DENY_KEYS = (OPERATOR_KEYS, "ai.operatorKeys")
"""`deny` at system level is a floor: a tenant's or project's `allow` row does not lift it."""
FACTORY_TTL_MINUTES = "research.factory.cache.ttlMinutes"
QUOTA_CACHE_TTL_MINUTES = "research.quota.cache.ttlMinutes"
LOG_RETENTION_DAYS = "research.log.retentionDays"
RETENTION_INTERVAL_SECONDS = "ai.usage.purgeIntervalSeconds"
"""How often a server runs the one retention job (every ledger, not only LLM usage)."""
CONTENT_MAX_BYTES = "research.content.maxBytes"
CONTENT_ALLOW_PRIVATE = "research.content.allowPrivate"
CONTENT_TIMEOUT_MS = "research.content.timeoutMs"
"""The total deadline of one content fetch (connect, every redirect, the whole body)."""
PROBE_INTERVAL_SECONDS = "research.probe.intervalSeconds"
ALLOWED_HOSTS = "http.allowedHosts"
"""Host names `/mcp` answers besides loopback and `auth.resource`'s (DNS-rebinding check; system level)."""
REGISTRATIONS_PER_HOUR = "auth.registration.perAddressPerHour"
"""Dynamic client registrations (`POST /register`) one client address may make per hour."""
UNUSED_CLIENTS_MAX = "auth.registration.maxUnusedClients"
"""Registered clients that never got a token, beyond which `POST /register` is refused."""
TASKS_TTL_SECONDS = "research.tasks.ttlSeconds"
"""How long a task (a detached investigation) and its result are kept after it was made or ended."""
TASKS_LEASE_SECONDS = "research.tasks.leaseSeconds"
"""How long a task's owner may go silent before another process takes the task over (system level)."""

# Endpoint suffixes with a meaning of their own; every other suffix is passed to the protocol as an extra.
SUFFIX_PROTOCOL = "protocol"
SUFFIX_BASE_URL = "baseUrl"
SUFFIX_API_KEY = "apiKey"
SUFFIX_ENABLED = "enabled"
SUFFIX_TIMEOUT_MS = "timeoutMs"
SUFFIX_RATE = "rateLimit.perSecond"
SUFFIX_BURST = "rateLimit.burst"
SUFFIX_HEDGE = "hedge"
SUFFIX_ORDER = "order"
"""An explicit place in the cascade where no routing setting names the endpoint (lower first)."""


def endpoint_key(instance_id: str, suffix: str) -> str:
    return f"{ENDPOINT_PREFIX}{instance_id}.{suffix}"


def default_key(modality: Modality) -> str:
    return f"research.default.{modality.setting_name}"


def fallback_key(modality: Modality) -> str:
    return f"research.fallback.{modality.setting_name}"


def cache_ttl_key(modality: Modality) -> str:
    return f"{CACHE_TTL_SECONDS}.{modality.setting_name}"


def cooldown_subject(instance_id: str, modality: Modality) -> str:
    return f"research:{instance_id}:{modality.setting_name}"


_SECRET_KEY = re.compile(r"(^|\.)(apiKey|api_key|password|secret|token)$", re.IGNORECASE)
_BOOL_KEYS = re.compile(
    r"(\.enabled|\.hedge|^research\.provenance|^research\.content\.allowPrivate|^research\.allowPrivateEndpoints)$"
)
_INT_KEYS = re.compile(
    r"(\.timeoutMs|\.order|\.quota\.daily|\.quota\.monthly|^research\.deadlineMs|^research\.cache\.ttlSeconds(\.\w+)?"
    r"|^research\.hedge\.afterMs|^research\.factory\.cache\.ttlMinutes|^research\.quota\.cache\.ttlMinutes"
    r"|^research\.log\.retentionDays|^research\.probe\.intervalSeconds|^research\.cache\.maxBytes|^research\.content\.maxBytes|^research\.investigate\.minHits"
    r"|^auth\.registration\.perAddressPerHour|^auth\.registration\.maxUnusedClients"
    r"|^research\.tasks\.ttlSeconds|^research\.tasks\.leaseSeconds)$"
)


def infer_type(key: str) -> str:
    """The stored type of a key: PASSWORD for credentials, INT/BOOL for known numeric/boolean keys."""
    if _SECRET_KEY.search(key):
        return "PASSWORD"
    if _BOOL_KEYS.search(key):
        return "BOOL"
    if _INT_KEYS.search(key):
        return "INT"
    return "STRING"


_KEY_SYNTAX = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-:]+)+$")


def is_valid_key(key: str) -> bool:
    return bool(_KEY_SYNTAX.match(key))

"""The documented setting keys: what each means and its built-in default, so that a typo is caught
("did you mean research.deadlineMs?") and `settings get/list` can show defaults nobody wrote down.

Patterns name the variable parts: `<id>` an endpoint or provider instance, `<modality>` a modality's
setting name (`web`, `internal_doc`, …), `<name>` a profile, `<rest>` any further dotted path.
`research.endpoint.<id>.<extra>` accepts any suffix — a protocol may read extras of its own — but
one that is a near miss of a known suffix (`timeoutms`) still gets a "did you mean".

    known_key("research.deadlinems")      # None
    nearest_key("research.deadlinems")    # "research.deadlineMs"
    documented_default("research.endpoint.wikipedia.timeoutMs")   # "8000"
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cache

from ..contract.enums import Modality


@dataclass(frozen=True, slots=True)
class KnownKey:
    pattern: str
    help: str
    default: str | None = None


ENDPOINT_SUFFIXES: tuple[KnownKey, ...] = (
    KnownKey("protocol", "the wire format of this endpoint (serper, wikipedia, …)"),
    KnownKey("baseUrl", "the API's base URL (a mirror, a self-hosted instance)"),
    KnownKey("apiKey", "the API key (stored encrypted, never printed)"),
    KnownKey("enabled", "false switches the endpoint off", "true"),
    KnownKey("timeoutMs", "per-call timeout", "8000"),
    KnownKey("rateLimit.perSecond", "requests per second per credential (default: the provider's free tier)"),
    KnownKey("rateLimit.burst", "requests allowed at once before pacing starts"),
    KnownKey("quota.daily", "calls per UTC day"),
    KnownKey("quota.monthly", "calls per UTC month"),
    KnownKey("hedge", "may be raced by the next candidate when slow", "true"),
    KnownKey("order", "an explicit place in the cascade where no routing names the endpoint (lower first)"),
    KnownKey("contactEmail", "sent to polite-pool APIs (OpenAlex, Crossref, Nominatim)"),
    KnownKey("userAgent", "the User-Agent sent upstream"),
    KnownKey(
        "traceparent", "requests to this endpoint carry the W3C `traceparent` (when tracing is on)", "false"
    ),
    KnownKey("language", "the language this instance serves (locale routing)"),
    KnownKey("search", "GitHub: what the endpoint searches (repositories, code, issues)", "repositories"),
    KnownKey("site", "Stack Exchange: the site searched", "stackoverflow"),
    KnownKey("sort", "PeerTube, Hacker News: the order of the answer"),
    KnownKey("countryCodes", "Nominatim: restrict places to these countries (comma list)"),
    KnownKey("timespan", "GDELT: how far back an undated search looks (`1w`, `3m`)"),
)

KNOWN_KEYS: tuple[KnownKey, ...] = (
    KnownKey("research.default.<modality>", "the endpoint tried first for a modality"),
    KnownKey("research.fallback.<modality>", "endpoints tried next, in order (comma list)"),
    KnownKey("research.deadlineMs", "no search outlives this", "20000"),
    KnownKey("research.cache.ttlSeconds", "result cache lifetime (0 = off)", "600"),
    KnownKey("research.cache.ttlSeconds.<modality>", "result cache lifetime for one modality"),
    KnownKey(
        "research.cache.maxBytes",
        "the embedded result cache's bound in bytes (system level)",
        str(64 * 1024 * 1024),
    ),
    KnownKey(
        "research.hedge.afterMs",
        "race a slow candidate by the next one after this (0 = off; unset = its observed p95)",
        "p95",
    ),
    KnownKey("research.provenance", "append `(via …)` to tool text", "false"),
    KnownKey(
        "research.operatorKeys", "deny: never use the operator's environment keys for this scope", "allow"
    ),
    KnownKey("research.factory.cache.ttlMinutes", "how long provider instances are kept", "5"),
    KnownKey("research.quota.cache.ttlMinutes", "how long provider-reported quotas are kept", "5"),
    KnownKey("research.log.retentionDays", "audit records kept this long", "30"),
    KnownKey("research.content.maxBytes", "content store size cap per body", str(20 * 1024 * 1024)),
    KnownKey(
        "research.content.timeoutMs",
        "total deadline of one content fetch or proxied image (connect + redirects + body)",
        "30000",
    ),
    KnownKey(
        "research.content.allowPrivate",
        "let the content fetcher reach private addresses (system level only)",
        "false",
    ),
    KnownKey(
        "research.allowPrivateEndpoints",
        "let endpoints whose baseUrl a tenant or project set reach private addresses (system level only)",
        "false",
    ),
    KnownKey("research.investigate.minHits", "below this, investigate runs a second wave", "3"),
    KnownKey(
        "research.tasks.ttlSeconds",
        "a task (detached investigation) and its result are kept this long",
        "86400",
    ),
    KnownKey(
        "research.tasks.leaseSeconds",
        "a task whose process is silent this long is taken over by another (system level)",
        "30",
    ),
    KnownKey("research.investigate.llm", "false keeps the built-in plan/evaluate strategies", "true"),
    KnownKey("research.insights.enabled", "investigate returns insights with citations", "true"),
    KnownKey("research.rerank.recipe", "a recipe that re-ranks investigate's survivors"),
    KnownKey("research.probe.intervalSeconds", "reachability probes of keyless endpoints (0 = off)", "300"),
    KnownKey("research.profile.<name>.providers", "an agent profile's providers, in order"),
    KnownKey("research.profile.<name>.providers.<modality>", "an agent profile's providers for one modality"),
    KnownKey(
        "research.profile.<name>.filters.<rest>", "an agent profile's default filter (excludeDomains, …)"
    ),
    KnownKey(
        "observability.traces.content",
        "put queries, prompts and completions in this scope's trace spans (else the query's SHA-256 only)",
        "false",
    ),
    KnownKey("ai.default.provider", "the provider of `default:` model specs"),
    KnownKey("ai.default.model", "the model of `default:` model specs"),
    KnownKey(
        "ai.alias.<rest>",
        "a model alias (`ai.alias.default.analyze: openai:gpt-4o`); `….fallback`: its runtime fallback chain",
    ),
    KnownKey("ai.provider.<id>.<rest>", "a named LLM provider instance (type, apiKey, baseUrl, …)"),
    KnownKey("ai.operatorKeys", "deny: never use the operator's environment keys for LLM calls", "allow"),
    KnownKey("ai.substitute", "let another provider serve a spec whose provider has no key", "false"),
    KnownKey("ai.call.timeoutMs", "per LLM call timeout"),
    KnownKey("ai.call.drainMs", "how long a call whose client went away runs on to learn its usage", "30000"),
    KnownKey("ai.failover.maxWaitSeconds", "longest Retry-After an LLM call waits before failing over"),
    KnownKey("ai.usage.retentionDays", "LLM usage records kept this long", "90"),
    KnownKey(
        "ai.usage.purgeIntervalSeconds",
        "how often a server runs retention (provider calls, LLM usage, quota windows)",
        "3600",
    ),
    KnownKey(
        "ai.rateLimit.windowSeconds", "the window requests_per_minute / tokens_per_minute count over", "60"
    ),
    KnownKey("ai.trace.persist", "keep raw LLM traces", "false"),
    KnownKey(
        "ai.responses.store",
        "false: the gateway's /v1/responses stores nothing (store: true and previous_response_id refused)",
        "true",
    ),
    KnownKey("ai.responses.retentionDays", "stored /v1/responses conversations kept this long", "30"),
    KnownKey("ai.quota.webhookUrl", "where quota threshold notices are posted"),
    KnownKey("ai.catalog.refreshMinutes", "model catalog refresh interval", "30"),
    KnownKey("ai.discovery.timeoutMs", "per-instance model discovery timeout"),
    KnownKey("ai.discovery.intervalMinutes", "scheduled model discovery (0 = off)", "0"),
    KnownKey(
        "http.allowedHosts",
        "Host names /mcp answers besides loopback and auth.resource's (comma list; system level, read at start)",
    ),
    KnownKey(
        "auth.registration.perAddressPerHour", "OAuth client registrations per client address per hour", "30"
    ),
    KnownKey(
        "auth.registration.maxUnusedClients",
        "registered OAuth clients never used, beyond which /register refuses",
        "1000",
    ),
)

_PLACEHOLDER = {
    "<modality>": "(?:" + "|".join(m.setting_name for m in Modality) + ")",
    "<id>": r"[^.]+",
    "<name>": r"[^.]+",
    "<rest>": r".+",
}


def _regex(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(<[a-z]+>)", pattern)
    return re.compile("^" + "".join(_PLACEHOLDER.get(p, re.escape(p)) for p in parts) + "$")


@cache
def _compiled() -> tuple[tuple[re.Pattern[str], KnownKey], ...]:
    return tuple((_regex(k.pattern), k) for k in KNOWN_KEYS)


def _endpoint_parts(key: str) -> tuple[str, str] | None:
    if not key.startswith("research.endpoint."):
        return None
    instance_id, _, suffix = key.removeprefix("research.endpoint.").partition(".")
    return (instance_id, suffix) if instance_id and suffix else None


def known_key(key: str) -> KnownKey | None:
    """The documented key `key` is an instance of (endpoint extras count as known), else None."""
    parts = _endpoint_parts(key)
    if parts is not None:
        suffix = parts[1]
        found = next((s for s in ENDPOINT_SUFFIXES if s.pattern == suffix), None)
        if found is not None:
            return found
        return (
            None
            if nearest_word(suffix, [s.pattern for s in ENDPOINT_SUFFIXES])
            else KnownKey(suffix, "extra")
        )
    return next((k for regex, k in _compiled() if regex.match(key)), None)


def nearest_key(key: str) -> str | None:
    """The documented key a misspelt `key` probably meant (`research.deadlinems` → `research.deadlineMs`)."""
    parts = _endpoint_parts(key)
    if parts is not None:
        near = nearest_word(parts[1], [s.pattern for s in ENDPOINT_SUFFIXES])
        return f"research.endpoint.{parts[0]}.{near}" if near else None
    concrete = [
        k.pattern.replace("<modality>", m.setting_name)
        for k in KNOWN_KEYS
        for m in (Modality if "<modality>" in k.pattern else (Modality.WEB,))
        if "<" not in k.pattern.replace("<modality>", "")
    ]
    lowered = {c.lower(): c for c in concrete}
    if key.lower() in lowered:
        return lowered[key.lower()]
    return nearest_word(key, concrete)


def documented_default(key: str) -> str | None:
    known = known_key(key)
    return known.default if known is not None else None


def nearest_word(word: str, choices: list[str]) -> str | None:
    """The one of `choices` a misspelt `word` probably meant (a case slip, or close), or None."""
    lowered = {c.lower(): c for c in choices}
    if word.lower() in lowered and word not in choices:
        return lowered[word.lower()]
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.85)
    return close[0] if close and close[0] != word else None


__all__ = [
    "ENDPOINT_SUFFIXES",
    "KNOWN_KEYS",
    "KnownKey",
    "documented_default",
    "known_key",
    "nearest_key",
    "nearest_word",
]

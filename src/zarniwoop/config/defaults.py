"""Built-in defaults: the outermost settings layer.

The keyless providers are enabled out of the box; the keyed ones are defined too and become
available as soon as a key resolves (setting, tenant credential, or the operator's environment).
Only endpoints whose protocol is installed are defined, so a slim install stays valid.
"""

from __future__ import annotations

from collections.abc import Iterable

BUILTIN_ENDPOINTS: tuple[tuple[str, str, dict[str, str]], ...] = (
    # (instance id, protocol id, extra settings). Order = cascade order where nothing else is said
    # (docs/providers.md gives the order per modality and why): the paid keyed providers first, so
    # they serve whenever their key resolves and cost no time (`skipped_no_key`) when it does not;
    # then per modality the best free source ahead of the narrower ones.
    ("serper", "serper", {}),
    ("brave", "brave", {}),
    ("exa", "exa", {}),
    ("tavily", "tavily", {}),
    ("wikipedia", "wikipedia", {}),
    ("openalex", "openalex", {}),
    ("crossref", "crossref", {}),
    ("semanticscholar", "semanticscholar", {}),
    ("europepmc", "europepmc", {}),
    ("arxiv", "arxiv", {}),
    ("pubmed", "pubmed", {}),
    ("openlibrary", "openlibrary", {}),
    ("gdelt", "gdelt", {}),
    ("hackernews", "hackernews", {}),
    ("github", "github", {}),
    ("stackexchange", "stackexchange", {}),
    ("commons", "commons", {}),
    ("peertube", "peertube", {}),
    ("nominatim", "nominatim", {}),
    ("local", "local", {}),
)

SERVICE_DEFAULTS: dict[str, str] = {
    "research.deadlineMs": "20000",
    "research.cache.ttlSeconds": "600",
    "research.cache.maxBytes": str(64 * 1024 * 1024),
    "research.cache.ttlSeconds.news": "120",
    "research.cache.ttlSeconds.encyclopedia": "86400",
    "research.cache.ttlSeconds.book": "86400",
    "research.cache.ttlSeconds.academic": "86400",
    # Places rarely move, and Nominatim's usage policy asks clients to cache what they looked up.
    "research.cache.ttlSeconds.map": "86400",
    # The local index answers in about a millisecond, and a re-index must show at once.
    "research.cache.ttlSeconds.internal_doc": "0",
    "research.cache.ttlSeconds.rag": "0",
    # research.hedge.afterMs unset: hedge after each endpoint's observed p95 (dispatch/hedging.py).
    "research.provenance": "false",
    "research.factory.cache.ttlMinutes": "5",
    "research.quota.cache.ttlMinutes": "5",
    "research.log.retentionDays": "30",
    "research.content.maxBytes": str(20 * 1024 * 1024),
    "research.content.allowPrivate": "false",
    "research.allowPrivateEndpoints": "false",
    "research.investigate.minHits": "3",
    "research.tasks.ttlSeconds": "86400",
    "research.tasks.leaseSeconds": "30",
}


def builtin_settings(installed_protocols: Iterable[str]) -> dict[str, str]:
    """The built-in layer for the protocols that are installed."""
    installed = set(installed_protocols)
    out = dict(SERVICE_DEFAULTS)
    for instance_id, protocol_id, extras in BUILTIN_ENDPOINTS:
        if protocol_id not in installed:
            continue
        out[f"research.endpoint.{instance_id}.protocol"] = protocol_id
        for suffix, value in extras.items():
            out[f"research.endpoint.{instance_id}.{suffix}"] = value
    return out

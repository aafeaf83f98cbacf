"""One endpoint's configuration from settings: which endpoints a scope names, and the
`InstanceConfig` of each — base URL, key (and where it came from), timeouts, pace, extras.

Pure functions over `ScopedSettings`; the provider factory (`dispatch/factory.py`) builds
instances from what they return, and boot validation (`config/validate.py`) checks it.

Key resolution per endpoint: the `.apiKey` setting, then a tenant credential (when a credential
lookup is wired in), then the operator's environment variable (`SERPER_API_KEY`, …) unless the
scope sets `research.operatorKeys: deny`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..contract.protocol import (
    FasterWithKey,
    HasOperatorKey,
    InstanceConfig,
    PacedByDefault,
    SearchProtocol,
    Secret,
)
from ..contract.query import SearchScope
from . import keys as K

if TYPE_CHECKING:
    from pathlib import Path

    from .settings import ScopedSettings

OPERATOR_KEY_ENV: dict[str, str] = {
    "serper": "SERPER_API_KEY",
    "brave": "BRAVE_API_KEY",
    "exa": "EXA_API_KEY",
    "tavily": "TAVILY_API_KEY",
    "pubmed": "NCBI_API_KEY",
}


CredentialLookup = Callable[[SearchScope, str], "Secret | None"]
"""`(scope, credential name) -> key`: tenant credentials (the LLM credential store), when wired in."""


def endpoint_ids(settings: ScopedSettings) -> list[str]:
    """Every endpoint id named under `research.endpoint.`, in settings order."""
    seen: dict[str, None] = {}
    for rest in settings.with_prefix(K.ENDPOINT_PREFIX):
        instance_id = rest.split(".", 1)[0]
        seen.setdefault(instance_id, None)
    return list(seen)


def instance_config(
    settings: ScopedSettings,
    instance_id: str,
    protocol: SearchProtocol,
    credential_lookup: CredentialLookup | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    home: Path | None = None,
) -> InstanceConfig:
    prefix = f"{K.ENDPOINT_PREFIX}{instance_id}."
    raw = settings.with_prefix(prefix)
    key, source = _resolve_key(settings, instance_id, protocol, credential_lookup, environ or os.environ)
    extras = {
        suffix: settings.get(prefix + suffix) or ""
        for suffix in raw
        if suffix
        not in (
            K.SUFFIX_PROTOCOL,
            K.SUFFIX_BASE_URL,
            K.SUFFIX_API_KEY,
            K.SUFFIX_ENABLED,
            K.SUFFIX_TIMEOUT_MS,
            K.SUFFIX_RATE,
            K.SUFFIX_HEDGE,
        )
    }
    return InstanceConfig(
        instance_id=instance_id,
        protocol_id=protocol.id,
        base_url=settings.get(prefix + K.SUFFIX_BASE_URL) or None,
        api_key=key,
        key_source=source,
        enabled=settings.get_bool(prefix + K.SUFFIX_ENABLED, True),
        timeout_ms=settings.get_int(prefix + K.SUFFIX_TIMEOUT_MS, 8000),
        rate_per_second=settings.get_float(prefix + K.SUFFIX_RATE, default_rate(protocol, key)),
        hedge=settings.get_bool(prefix + K.SUFFIX_HEDGE, True),
        extras=extras,
        home=home,
    )


def default_rate(protocol: SearchProtocol, key: Secret | None) -> float | None:
    """The protocol's documented free-tier pace; some providers allow more with a key (PubMed 3/s → 10/s)."""
    if key and isinstance(protocol, FasterWithKey):
        return float(protocol.default_rate_with_key)
    if isinstance(protocol, PacedByDefault) and protocol.default_rate_per_second is not None:
        return float(protocol.default_rate_per_second)
    return None


def _resolve_key(
    settings: ScopedSettings,
    instance_id: str,
    protocol: SearchProtocol,
    credential_lookup: CredentialLookup | None,
    environ: Mapping[str, str],
) -> tuple[Secret | None, str | None]:
    secret = settings.secret(K.endpoint_key(instance_id, K.SUFFIX_API_KEY))
    if secret:
        return secret, "setting"
    if credential_lookup is not None:
        for name in (instance_id, protocol.id):
            found = credential_lookup(settings.scope, name)
            if found:
                return found, f"credential:{name}"
    if (settings.get(K.OPERATOR_KEYS) or "allow").lower() != "deny":
        env_name = (
            protocol.env_key if isinstance(protocol, HasOperatorKey) else OPERATOR_KEY_ENV.get(protocol.id)
        )
        if env_name and environ.get(env_name):
            return Secret(environ[env_name]), f"env:{env_name}"
    return None, None

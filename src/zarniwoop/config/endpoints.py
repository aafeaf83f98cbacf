"""One endpoint's configuration from settings: which endpoints a scope names, and the
`InstanceConfig` of each — base URL, key (and where it came from), timeouts, pace, extras.

Pure functions over `ScopedSettings`; the provider factory (`dispatch/factory.py`) builds
instances from what they return, and boot validation (`config/validate.py`) checks it.

Key resolution per endpoint: the `.apiKey` setting, then a tenant credential (when a credential
lookup is wired in), then the operator's environment variable (`SERPER_API_KEY`, …) unless the
scope sets `research.operatorKeys: deny` — and never when a tenant or project chose the endpoint's
`baseUrl` (`config/trust.py`).
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
from .ceilings import operator_funded, operator_rate
from .trust import ALLOW_PRIVATE_ENDPOINTS, operator_flag, untrusted_endpoint

if TYPE_CHECKING:
    from pathlib import Path

    from .settings import ScopedSettings

CredentialLookup = Callable[[SearchScope, str, "str | None"], "Secret | None"]
"""`(scope, credential name, operator variable or None) -> key`: tenant credentials (the LLM credential
store), when wired in; a credential named like the protocol's operator variable counts too."""


def operator_env(protocol: SearchProtocol) -> str | None:
    """The operator's environment variable holding a key for `protocol` (`SERPER_API_KEY`): what the
    protocol itself declares as `env_key` (`HasOperatorKey`), the one table of them. Key resolution,
    the credential store's names, the console's forms and a `no_key` skip's hint all read it here."""
    return (protocol.env_key or None) if isinstance(protocol, HasOperatorKey) else None


def endpoint_ids(settings: ScopedSettings) -> list[str]:
    """Every endpoint named under `research.endpoint.`, in cascade order (where no routing says more).

    The order never depends on which keys happen to be set: endpoints with an explicit `.order`
    come first (lowest first), then the configured endpoints in the order they were defined (the
    first write of their `.protocol` key), then the built-in endpoints in their fixed order.
    Setting `.rateLimit.perSecond` of a built-in endpoint leaves it where it was.
    """
    ranks: dict[str, tuple[int, float]] = {}
    for rest in settings.with_prefix(K.ENDPOINT_PREFIX):
        instance_id = rest.split(".", 1)[0]
        if instance_id not in ranks:
            ranks[instance_id] = _rank(settings, instance_id)
    return sorted(ranks, key=ranks.__getitem__)


def _rank(settings: ScopedSettings, instance_id: str) -> tuple[int, float]:
    explicit = settings.get(K.endpoint_key(instance_id, K.SUFFIX_ORDER))
    if explicit:
        try:
            return (0, float(explicit))
        except ValueError:
            pass  # boot validation names the key; until then it keeps its defined place
    row = settings.row(K.endpoint_key(instance_id, K.SUFFIX_PROTOCOL))
    if row is None:
        return (3, 0.0)  # no `.protocol`: not an endpoint (the factory ignores it)
    return (2 if row.level == "builtin" else 1, float(row.seq))


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
    untrusted = untrusted_endpoint(settings, instance_id)
    key, source = _resolve_key(
        settings, instance_id, protocol, credential_lookup, environ or os.environ, operator_url=not untrusted
    )
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
            K.SUFFIX_BURST,
            K.SUFFIX_HEDGE,
            K.SUFFIX_ORDER,
        )
    }
    funded = operator_funded(settings, instance_id, source)
    rate, burst = (
        (
            operator_rate(settings, instance_id, K.SUFFIX_RATE, default_rate(protocol, key)),
            operator_rate(settings, instance_id, K.SUFFIX_BURST, None),
        )
        if funded  # the operator's limits are a ceiling (config/ceilings.py)
        else (
            settings.get_float(prefix + K.SUFFIX_RATE, default_rate(protocol, key)),
            settings.get_float(prefix + K.SUFFIX_BURST, None),
        )
    )
    return InstanceConfig(
        instance_id=instance_id,
        protocol_id=protocol.id,
        base_url=settings.get(prefix + K.SUFFIX_BASE_URL) or None,
        api_key=key,
        key_source=source,
        operator_funded=funded,
        enabled=settings.get_bool(prefix + K.SUFFIX_ENABLED, True),
        timeout_ms=settings.get_int(prefix + K.SUFFIX_TIMEOUT_MS, 8000),
        rate_per_second=rate,
        rate_burst=burst,
        hedge=settings.get_bool(prefix + K.SUFFIX_HEDGE, True),
        extras=extras,
        home=home,
        untrusted=untrusted,
        allow_private=operator_flag(settings, ALLOW_PRIVATE_ENDPOINTS),
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
    *,
    operator_url: bool,
) -> tuple[Secret | None, str | None]:
    secret = settings.secret(K.endpoint_key(instance_id, K.SUFFIX_API_KEY))
    if secret:
        return secret, "setting"
    env_name = operator_env(protocol)
    if credential_lookup is not None:
        for name, env_alias in ((instance_id, None), (protocol.id, env_name)):
            found = credential_lookup(settings.scope, name, env_alias)
            if found:
                return found, f"credential:{name}"
    # The operator's key only goes where the operator sends it (config/trust.py).
    allowed = operator_url and (settings.get(K.OPERATOR_KEYS) or "allow").lower() != "deny"
    if allowed and env_name and environ.get(env_name):
        return Secret(environ[env_name]), f"env:{env_name}"
    return None, None

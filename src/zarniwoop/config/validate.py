"""Boot validation: a bad configuration is reported at start-up, naming the key, not at the first search.

Checked for every scope that has settings: each endpoint's protocol exists and accepts its config
(SearXNG without `baseUrl`, …); `research.default.<modality>` / `research.fallback.<modality>`
name a real modality and an existing, enabled endpoint that serves it; so do agent profiles
`research.profile.<name>.providers[.<modality>]` (the generic list: existing, enabled); typed
keys parse; numeric keys lie within their bounds (`bounds.BOUNDS`); API keys are printable ASCII
(`bounds.check_api_key`); and every row is one its level may write (`config/trust.py`: system-only
switches, endpoint URLs set below system level).
An endpoint extra its protocol does not read is not an error (an add-on may read more than it
declares) but a warning at start-up, naming the key and the extras the protocol knows
(`extras_warnings`): a typo like `userAgnet` would otherwise be silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from ..contract.enums import Modality
from ..contract.errors import ConfigError, InvalidRequestError
from ..contract.protocol import ValidatesConfig, known_extras
from ..contract.query import PROFILE_RULE, SearchScope
from ..protocols import refused_protocols
from . import keys as K
from .bounds import check_api_key, check_bounds
from .ceilings import ceiling_problems
from .endpoints import default_rate, endpoint_ids, instance_config
from .known_keys import known_key
from .profiles import (
    PROFILE_FILTERS,
    PROFILE_PREFIX,
    default_filters,
    parse_profile_filter_key,
    parse_profile_key,
)
from .trust import ALLOW_PRIVATE_ENDPOINTS, check_writes, operator_flag

if TYPE_CHECKING:
    from ..contract.protocol import SearchProtocol
    from .settings import ScopedSettings, SettingService

_ROUTING = ("research.default.", "research.fallback.")
_SYSTEM = SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL)


def validate_settings(service: SettingService, protocols: Mapping[str, SearchProtocol]) -> list[ConfigError]:
    """Every problem in every scope (empty list = valid)."""
    system = service.scoped(_SYSTEM)
    allow_private = operator_flag(system, ALLOW_PRIVATE_ENDPOINTS)
    writes = [  # who may write what (config/trust.py), row by row
        error
        for row in service.rows()
        if row.type != "PASSWORD"
        for error in check_writes(row.level, {row.key: row.value}, allow_private_endpoints=allow_private)
    ]
    return _first_per_key([*writes, *scope_problems(service, lambda s: validate_scope(s, protocols))])


def scope_problems(
    service: SettingService, check: Callable[[ScopedSettings], Iterable[ConfigError]]
) -> list[ConfigError]:
    """`check`'s problems in the system scope and every scope that has settings, once per key (the
    outermost scope that has it): what each boot check reports."""
    return _first_per_key(
        error for scope in [_SYSTEM, *service.scopes()] for error in check(service.scoped(scope))
    )


def _first_per_key(errors: Iterable[ConfigError]) -> list[ConfigError]:
    problems: dict[str, ConfigError] = {}
    for error in errors:
        problems.setdefault(error.key, error)
    return list(problems.values())


def extras_warnings(service: SettingService, protocols: Mapping[str, SearchProtocol]) -> list[str]:
    """One line per endpoint extra, in any scope, that its protocol does not read."""
    warnings: dict[str, str] = {}
    for scope in [_SYSTEM, *service.scopes()]:
        settings = service.scoped(scope)
        for instance_id in endpoint_ids(settings):
            protocol = protocols.get(settings.get(K.endpoint_key(instance_id, K.SUFFIX_PROTOCOL)) or "")
            if protocol is None:
                continue
            known = known_extras(protocol)
            for suffix in instance_config(settings, instance_id, protocol).extras:
                key = K.endpoint_key(instance_id, suffix)
                # A misspelt core key (`timeoutMS`) is no extra: it was warned as it came in — at
                # start-up for a file's key, by `settings set` for a stored one — with the key it meant.
                if suffix not in known and known_key(key) is not None:
                    warnings.setdefault(
                        key,
                        f"{key}: unknown extra {suffix!r} for protocol {protocol.id!r}, ignored; "
                        f"known extras: {', '.join(sorted(known))}",
                    )
    return list(warnings.values())


def validate_scope(settings: ScopedSettings, protocols: Mapping[str, SearchProtocol]) -> list[ConfigError]:
    errors: list[ConfigError] = []
    endpoints: dict[str, SearchProtocol] = {}
    for instance_id in endpoint_ids(settings):
        key = K.endpoint_key(instance_id, K.SUFFIX_PROTOCOL)
        protocol_id = settings.get(key)
        if not protocol_id:
            continue
        protocol = protocols.get(protocol_id)
        if protocol is None:
            refused = refused_protocols().get(protocol_id)
            why = (
                f"{refused} (the add-on was refused at start-up)"
                if refused
                else f"unknown protocol {protocol_id!r}; installed: {', '.join(sorted(protocols))}"
            )
            errors.append(ConfigError(key, why))
            continue
        try:
            config = instance_config(settings, instance_id, protocol)
            if isinstance(protocol, ValidatesConfig):
                protocol.validate_config(config)
        except ConfigError as exc:
            errors.append(exc)
            continue
        if config.api_key:
            problem = check_api_key(_key_origin(instance_id, config.key_source), config.api_key.reveal())
            if problem is not None:
                errors.append(problem)
        errors.extend(ceiling_problems(settings, config, default_rate(protocol, config.api_key)))
        endpoints[instance_id] = protocol
    for key in list(settings.keys()):
        if key.startswith(_ROUTING):
            errors.extend(_check_routing(settings, endpoints, key, key.split(".", 2)[2]))
        elif (profile := parse_profile_key(key)) is not None:
            name, modality_name = profile
            if re.fullmatch(PROFILE_RULE, name) is None:
                errors.append(ConfigError(key, f"profile name {name!r} must match {PROFILE_RULE}"))
            elif modality_name is None:
                errors.extend(_check_ids(settings, endpoints, key, None))
            else:
                errors.extend(_check_routing(settings, endpoints, key, modality_name))
        elif (filtered := parse_profile_filter_key(key)) is not None:
            errors.extend(_check_profile_filter(settings, key, filtered[1]))
        elif key.startswith(PROFILE_PREFIX):
            errors.append(
                ConfigError(
                    key, "expected research.profile.<name>.providers[.<modality>] or .filters.<filter>"
                )
            )
    for key in list(settings.keys()):
        row = settings.row(key)
        if row is None:
            continue
        if row.type == "PASSWORD" and key.endswith(("apiKey", "api_key")):
            value = settings.get(key)
            if value and (problem := check_api_key(key, value)) is not None:
                errors.append(problem)
            continue
        try:
            if row.type == "INT":
                settings.get_int(key, 0)
            elif row.type == "BOOL":
                settings.get_bool(key, False)
        except ConfigError as exc:
            errors.append(exc)
            continue
        if (problem := check_bounds(key, settings.get(key))) is not None:  # after the type: its message first
            errors.append(problem)
    return errors


def _check_routing(
    settings: ScopedSettings, endpoints: Mapping[str, SearchProtocol], key: str, modality_name: str
) -> list[ConfigError]:
    """A key routing one modality (`research.default.web`, `research.profile.x.providers.web`)."""
    try:
        modality = Modality.parse(modality_name, field=key)
    except Exception:
        valid = ", ".join(m.setting_name for m in Modality)
        return [ConfigError(key, f"unknown modality {modality_name!r}; expected one of {valid}")]
    return _check_ids(settings, endpoints, key, modality)


def _check_ids(
    settings: ScopedSettings,
    endpoints: Mapping[str, SearchProtocol],
    key: str,
    modality: Modality | None,
) -> list[ConfigError]:
    """Each endpoint a routing key names exists, is enabled and (for one modality) serves it."""
    errors: list[ConfigError] = []
    for instance_id in settings.get_list(key):
        protocol = endpoints.get(instance_id)
        if protocol is None:
            errors.append(ConfigError(key, f"names endpoint {instance_id!r}, which is not defined"))
        elif not settings.get_bool(K.endpoint_key(instance_id, K.SUFFIX_ENABLED), True):
            errors.append(ConfigError(key, f"names endpoint {instance_id!r}, which is disabled"))
        elif modality is not None and modality not in protocol.modalities:
            errors.append(
                ConfigError(key, f"endpoint {instance_id!r} ({protocol.id}) does not serve {modality.value}")
            )
    return errors


def _key_origin(instance_id: str, source: str | None) -> str:
    """Where an endpoint's key came from, as the user would look for it: the operator's environment
    variable, or the setting (boot validation resolves no tenant credentials)."""
    if source and source.startswith("env:"):
        return source.removeprefix("env:")
    return K.endpoint_key(instance_id, K.SUFFIX_API_KEY)


def _check_profile_filter(settings: ScopedSettings, key: str, name: str) -> list[ConfigError]:
    """A profile's default filter: a known filter with a value the search contract accepts."""
    if name not in PROFILE_FILTERS:
        return [ConfigError(key, f"unknown filter {name!r}; expected one of {', '.join(PROFILE_FILTERS)}")]
    try:
        default_filters({name: settings.get(key) or ""})
    except InvalidRequestError as exc:
        return [ConfigError(key, exc.reason)]
    return []

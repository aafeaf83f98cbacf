"""SearchProviderFactory: the provider instances of a `(tenant, project)`, built from settings.

Instances are cached per scope for `research.factory.cache.ttlMinutes` (and rebuilt sooner when
the settings changed). `dispose(scope)` — `zarniwoop projects stop` — evicts a scope and calls
`dispose()` on each of its instances. Two projects using the same endpoint get two instances:
own cooldowns, own quota cache, own workspace, no reference counting.

Key resolution per endpoint: the `.apiKey` setting, then a tenant credential (when a credential
lookup is wired in), then the operator's environment variable (`SERPER_API_KEY`, …) unless the
scope sets `research.operatorKeys: deny`.
"""

from __future__ import annotations

import asyncio
import difflib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Protocol

from ..config import keys as K
from ..config.endpoints import CredentialLookup, endpoint_ids, instance_config
from ..contract.enums import Modality
from ..contract.errors import ConfigError
from ..contract.protocol import (
    CAPABILITIES,
    HttpSearchProtocol,
    InstantiatesItself,
    ProviderInstance,
    SearchProtocol,
    ValidatesConfig,
)
from ..contract.query import SearchScope
from ..limits.clock import Clock
from ..observability.outage import OutageLog
from ..protocols import refused_protocols
from .instance import HttpProviderInstance

if TYPE_CHECKING:
    from pathlib import Path

    from ..config.settings import ScopedSettings, SettingService
    from ..transport.http import HttpTransport

log = logging.getLogger(__name__)

SETTINGS_RECHECK_SECONDS = 2.0


class VersionedSource(Protocol):
    """A snapshot that reloads when its table changed and bumps `version` when it did."""

    version: int

    async def refresh(self, *, max_age: float = 0.0) -> bool: ...


@dataclass(slots=True)
class ProviderSet:
    """The instances of one scope, in settings order, with the settings they were built from."""

    scope: SearchScope
    settings: ScopedSettings
    instances: dict[str, ProviderInstance]
    built_at: float
    source_version: tuple[int, ...]
    """Versions of the settings and credentials it was built from; a change rebuilds it."""
    errors: dict[str, str] = field(default_factory=dict)
    """Endpoints that could not be built (unknown protocol, …), with the reason."""
    orders: dict[tuple[Modality, str | None], tuple[ProviderInstance, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )
    """`ordering.order_candidates` without a profile, by (modality, locale): fixed for the set's
    settings, so computed once per settings generation rather than per search."""


class ProviderFactory:
    def __init__(
        self,
        settings: SettingService,
        protocols: Mapping[str, SearchProtocol],
        transport: HttpTransport,
        *,
        credential_lookup: CredentialLookup | None = None,
        watch: Sequence[VersionedSource] = (),
        home: Path | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock or Clock()
        """Times how long a built provider set is reused (`research.factory.ttlMinutes`)."""
        self._sources: tuple[VersionedSource, ...] = (settings, *watch)
        """What instances are built from (settings, and the credential store when wired in)."""
        self.home = home
        """ZARNIWOOP_HOME, handed to each instance (`InstanceConfig.home`): the local index lives there."""
        self.protocols = protocols
        for protocol in protocols.values():
            check_capabilities(protocol)
        self.transport = transport
        self.credential_lookup = credential_lookup
        self._cache: dict[SearchScope, ProviderSet] = {}
        self._lock = asyncio.Lock()
        self._settings_outage = OutageLog(log, "settings database")

    async def providers(self, scope: SearchScope) -> ProviderSet:
        # Another process (a CLI `settings set` or `credentials set`, another replica) may have changed
        # what instances are built from: a cheap fingerprint query at most every couple of seconds
        # notices it.
        try:
            for source in self._sources:
                await source.refresh(max_age=SETTINGS_RECHECK_SECONDS)
            self._settings_outage.recovered()
        except Exception as exc:  # the database being down must not stop searches
            self._settings_outage.failed(exc, "searches use the settings loaded before")
        cached = self._cache.get(scope)
        if cached is not None and self._fresh(cached):
            return cached
        async with self._lock:
            cached = self._cache.get(scope)
            if cached is not None and self._fresh(cached):
                return cached
            built = self.build(scope)
            if cached is not None:
                await _dispose_all(cached)
            self._cache[scope] = built
            return built

    def _version(self) -> tuple[int, ...]:
        return tuple(source.version for source in self._sources)

    def _fresh(self, cached: ProviderSet) -> bool:
        if cached.source_version != self._version():
            return False
        ttl = cached.settings.get_int(K.FACTORY_TTL_MINUTES, 5) * 60
        return self.clock.monotonic() - cached.built_at < ttl

    def build(self, scope: SearchScope, overrides: Mapping[str, str] | None = None) -> ProviderSet:
        settings = self.settings.scoped(scope, overrides)
        instances: dict[str, ProviderInstance] = {}
        errors: dict[str, str] = {}
        for instance_id in endpoint_ids(settings):
            protocol_id = settings.get(K.endpoint_key(instance_id, K.SUFFIX_PROTOCOL))
            if not protocol_id:
                continue  # the seed: without `.protocol` an endpoint is ignored
            protocol = self.protocols.get(protocol_id)
            if protocol is None:
                errors[instance_id] = (
                    refused_protocols().get(protocol_id) or f"unknown protocol {protocol_id!r}"
                )
                continue
            try:
                config = instance_config(
                    settings, instance_id, protocol, self.credential_lookup, home=self.home
                )
                if isinstance(protocol, ValidatesConfig):
                    protocol.validate_config(config)
            except ConfigError as exc:
                errors[instance_id] = exc.reason
                continue
            if isinstance(protocol, InstantiatesItself):
                instances[instance_id] = protocol.instantiate(config, self.transport)
            elif isinstance(protocol, HttpSearchProtocol):
                instances[instance_id] = HttpProviderInstance(protocol, config, self.transport)
            else:
                errors[instance_id] = (
                    f"protocol {protocol.id!r} has neither build_request/parse_response nor instantiate"
                )
        return ProviderSet(scope, settings, instances, self.clock.monotonic(), self._version(), errors)

    async def dispose(self, scope: SearchScope) -> int:
        """Evict a scope's instances and dispose each; returns how many were disposed."""
        cached = self._cache.pop(scope, None)
        if cached is None:
            return 0
        await _dispose_all(cached)
        return len(cached.instances)

    async def aclose(self) -> None:
        for scope in list(self._cache):
            await self.dispose(scope)


async def _dispose_all(provider_set: ProviderSet) -> None:
    for instance in provider_set.instances.values():
        await instance.dispose()


def _member_names(capability: type) -> set[str]:
    names: set[str] = set()
    for cls in capability.__mro__:
        if cls in (Protocol, Generic, object):
            continue
        names.update(n for n in (*vars(cls), *vars(cls).get("__annotations__", {})) if not n.startswith("_"))
    return names


_KNOWN_NAMES = frozenset(name for c in (SearchProtocol, *CAPABILITIES) for name in _member_names(c))
_checked: set[int] = set()


def check_capabilities(protocol: SearchProtocol) -> None:
    """Once per protocol object: warn about public attributes that look like a misspelt optional
    capability (`descibe_error`), which would otherwise silently switch that capability off."""
    if id(protocol) in _checked:
        return
    _checked.add(id(protocol))
    for name in dir(protocol):
        if name.startswith("_") or name in _KNOWN_NAMES:
            continue
        close = difflib.get_close_matches(name, _KNOWN_NAMES, n=1, cutoff=0.85)
        if close:
            log.warning(
                "protocol %s: %r is not a protocol capability; did you mean %r? (it is ignored)",
                protocol.id,
                name,
                close[0],
            )

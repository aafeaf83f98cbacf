"""Free reachability probes (seed 003): is a keyless endpoint answering, before anyone searches?

A keyless endpoint gets one cheap request — the protocol's own health call where it has one
(`ProbesCheaply`: SearXNG's `/healthz`), else a one-result search — paced like a real call and
counted against its rate limit, never against a paid quota. Keyed (paid) providers are never
probed: a probe query costs money; they keep last-outcome reachability. A failed probe sets no
cooldown (only real calls do); it shows as `reachable: false` and `lastProbe` in the views.

`zarniwoop serve` probes at start and every `research.probe.intervalSeconds` (300, 0 = off);
`zarniwoop providers --probe` probes once.

    prober = Prober(dispatcher)
    results = await prober.probe_scope(SearchScope())     # {instance id: ProbeResult}
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..config import keys as K
from ..contract.errors import ZarniwoopError
from ..contract.protocol import DeclinesProbes, HttpSearchProtocol, ProbesCheaply
from ..contract.query import SearchRequest
from ..limits.pacing import pace_key, wait_for_slot
from .reachability import ProbeResult

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ..contract.protocol import ProviderInstance, RequestSpec
    from ..contract.query import SearchScope
    from .dispatcher import Dispatcher

log = logging.getLogger(__name__)
PROBE_TIMEOUT_SECONDS = 5.0
DEFAULT_INTERVAL_SECONDS = 300


def probe_identity(instance: ProviderInstance) -> str:
    """Probes are per endpoint (protocol and address), not per scope: two projects using the same
    endpoint share one probe."""
    return f"{instance.protocol.id}|{instance.config.base_url or ''}"


def is_probeable(instance: ProviderInstance) -> bool:
    """Enabled, spoken over HTTP, and free to call: never a provider that needs a key, nor one whose
    small keyless quota a probe would eat (`DeclinesProbes`)."""
    protocol = instance.protocol
    declines = isinstance(protocol, DeclinesProbes) and not protocol.probes_allowed
    return (
        instance.config.enabled
        and not protocol.key_required
        and isinstance(protocol, HttpSearchProtocol)
        and not declines
    )


class Prober:
    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.results: dict[str, ProbeResult] = dispatcher.probes

    async def probe(self, instance: ProviderInstance) -> ProbeResult:
        protocol, config = instance.protocol, instance.config
        assert isinstance(protocol, HttpSearchProtocol)
        clock = self.dispatcher.clock
        key = pace_key(protocol.id, config.instance_id, config.api_key.reveal() if config.api_key else None)
        delay = await self.dispatcher.limiter.reserve(
            key, config.rate_per_second, max_wait=math.inf, burst=config.rate_burst
        )
        await wait_for_slot(delay or 0.0, clock)  # a probe has no deadline: it waits for its slot
        began = time.perf_counter()
        try:
            spec = self._request(instance)
            raw = await self.dispatcher.factory.transport.send(
                spec, timeout=min(PROBE_TIMEOUT_SECONDS, config.timeout_ms / 1000)
            )
            # Any HTTP answer but a server error means the endpoint is there and talking.
            ok = raw.status < 500
            error = None if ok else f"HTTP {raw.status}"
        except ZarniwoopError as exc:
            ok, error = False, exc.message
        except Exception as exc:  # a probe must never take the server down
            ok, error = False, type(exc).__name__
        result = ProbeResult(clock.now(), ok, int((time.perf_counter() - began) * 1000), error)
        self.results[probe_identity(instance)] = result
        return result

    def _request(self, instance: ProviderInstance) -> RequestSpec:
        protocol, config = instance.protocol, instance.config
        if isinstance(protocol, ProbesCheaply):
            return protocol.probe_request(config)
        assert isinstance(protocol, HttpSearchProtocol)
        modality = sorted(protocol.modalities, key=lambda m: m.value)[0]
        today = datetime.fromtimestamp(self.dispatcher.clock.now(), UTC).date()
        return protocol.build_request(SearchRequest.create("test", modality, max_results=1).on(today), config)

    async def probe_scope(self, scope: SearchScope) -> dict[str, ProbeResult]:
        provider_set = await self.dispatcher.factory.providers(scope)
        return await self.probe_instances(provider_set.instances.values())

    async def probe_instances(self, instances: Iterable[ProviderInstance]) -> dict[str, ProbeResult]:
        """Probe each probeable instance once per endpoint, concurrently; `{instance id: result}`."""
        chosen: dict[str, ProviderInstance] = {}
        for instance in instances:
            if is_probeable(instance):
                chosen.setdefault(probe_identity(instance), instance)
        done = await asyncio.gather(*(self.probe(i) for i in chosen.values()))
        by_identity = dict(zip(chosen, done, strict=True))
        return {
            i.id: by_identity[probe_identity(i)]
            for i in instances
            if probe_identity(i) in by_identity and is_probeable(i)
        }

    async def run_forever(self, scopes: Callable[[], Iterable[SearchScope]]) -> None:
        """Probe every scope's endpoints now and then every `research.probe.intervalSeconds`."""
        while True:
            system = self.dispatcher.factory.settings.scoped(_system_scope())
            interval = system.get_int(K.PROBE_INTERVAL_SECONDS, DEFAULT_INTERVAL_SECONDS)
            if interval <= 0:
                return
            instances: list[ProviderInstance] = []
            for scope in scopes():
                try:
                    instances += (await self.dispatcher.factory.providers(scope)).instances.values()
                except Exception:
                    log.warning(
                        "probes: the providers of %s/%s could not be built", scope.tenant, scope.project
                    )
            await self.probe_instances(instances)
            await asyncio.sleep(interval)


def _system_scope() -> SearchScope:
    from ..contract.query import SearchScope

    return SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL)


__all__ = ["DEFAULT_INTERVAL_SECONDS", "ProbeResult", "Prober", "is_probeable", "probe_identity"]

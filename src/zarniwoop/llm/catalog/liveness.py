"""Which usable models can answer right now: a local server (Ollama, LM Studio, a vLLM behind the
OpenAI wire) is listed only while a recent probe of it succeeded, and only with what it serves.

A key makes a cloud model usable; a local server needs none, so "configured" says nothing about
whether it runs. `GET /v1/models` asks `partition()`: each local instance is probed with its own
listing API (`discovery.list_models`, the same request discovery sends), at most once per
`ttl` seconds per instance and base URL, each under `timeout`; an instance that refuses, hangs or
answers garbage hides its models, naming why, and a reachable one contributes what its listing
says (also models no catalog document names).

    probes = LocalProbes()
    shown, hidden = await partition(manager, await usable_models(manager, catalog, call), call, probes)
    [(m.id, m.owned_by) for m in shown], [(h.model.id, h.reason) for h in hidden]
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ...contract.errors import ZarniwoopError
from ...contract.query import SearchScope
from ...limits.clock import Clock
from ..adapters.wire import WIRE_TYPES
from ..choice.key import CandidateBuilder
from .discovery import PROVIDER_PREFIX, ProviderInstanceSettings, list_models
from .usable import Caller, Sources, UsableModel

if TYPE_CHECKING:
    from ...config.settings import ScopedSettings
    from ...transport.http import HttpTransport

DEFAULT_TTL_SECONDS = 30.0
"""How long one probe's answer stands (a failure too: a dead server is not asked on every listing)."""
DEFAULT_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class Probe:
    ok: bool
    models: frozenset[str]
    """The wire names of the chat models the server listed."""
    reason: str | None
    at: float

    def serves(self, wire_name: str) -> bool:
        # Ollama lists `llama3.1:latest` for what a catalog calls `llama3.1`
        return wire_name in self.models or f"{wire_name}:latest" in self.models


@dataclass(frozen=True, slots=True)
class Hidden:
    model: UsableModel
    reason: str


class LocalProbes:
    """The recent probes of local instances (one per process, on the HTTP app's state)."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL_SECONDS,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        clock: Clock | None = None,
    ) -> None:
        self.ttl = ttl
        self.timeout = timeout
        self.clock = clock or Clock()
        self._probes: dict[tuple[str, str], Probe] = {}

    async def check(self, http: HttpTransport, instance: ProviderInstanceSettings) -> Probe:
        key = (instance.instance, instance.base_url)
        cached = self._probes.get(key)
        if cached is not None and self.clock.monotonic() - cached.at < self.ttl:
            return cached
        try:
            async with asyncio.timeout(self.timeout):
                listed = await list_models(http, instance, self.timeout)
            chat = frozenset(m.wire_name for m in listed if m.kind == "chat")
            probe = Probe(True, chat, None, self.clock.monotonic())
        except TimeoutError:
            probe = Probe(False, frozenset(), f"no answer within {self.timeout:g}s", self.clock.monotonic())
        except ZarniwoopError as exc:
            probe = Probe(False, frozenset(), exc.message, self.clock.monotonic())
        self._probes[key] = probe
        return probe


def is_local(model: UsableModel) -> bool:
    vendor = WIRE_TYPES.get(model.wire_type)
    return (vendor is not None and vendor.local) or model.credential_source == "local"


class ProbingSources(Sources, Protocol):
    """The `LlmManager`'s stores `usable_models` reads, and its HTTP transport for the probes."""

    @property
    def http(self) -> HttpTransport: ...


async def partition(
    manager: ProbingSources, models: Sequence[UsableModel], call: Caller, probes: LocalProbes
) -> tuple[list[UsableModel], list[Hidden]]:
    """`(what can answer, what cannot and why)`; cloud models pass as they are."""
    settings = manager.settings.scoped(SearchScope(call.tenant, call.project))
    scope = manager.directory.scope(call.tenant, call.project, call.account, team=call.team)
    builder = CandidateBuilder(scope, settings, manager.credentials, manager.environ)
    local, sources = _local_instances(builder, settings, models)

    async def probe(instance: str, wire: str) -> Probe:
        untrusted, guarded = builder.untrusted(instance)
        target = ProviderInstanceSettings(
            instance, wire, builder.base_url(wire, instance), None, untrusted, guarded
        )
        return await probes.check(manager.http, target)

    found = await asyncio.gather(*(probe(i, w) for i, w in local.items()))
    by_instance = dict(zip(local, found, strict=True))
    shown: list[UsableModel] = []
    hidden: list[Hidden] = []
    for model in models:
        result = by_instance.get(model.owned_by) if is_local(model) else None
        wire_name = model.target.partition(":")[2]
        if result is None:
            shown.append(model)
        elif not result.ok:
            hidden.append(Hidden(model, f"{model.owned_by} is not reachable: {result.reason}"))
        elif not result.serves(wire_name):
            hidden.append(Hidden(model, f"{model.owned_by} does not list {wire_name!r}"))
        else:
            shown.append(model)
    ids = {m.id for m in shown} | {h.model.id for h in hidden}
    for instance, result in by_instance.items():
        for wire_name in sorted(result.models):
            model_id = f"{instance}:{wire_name}"
            if model_id not in ids and model_id.removesuffix(":latest") not in ids:
                shown.append(
                    UsableModel(model_id, instance, model_id, sources[instance], wire_type=local[instance])
                )
    return shown, hidden


def _local_instances(
    builder: CandidateBuilder, settings: ScopedSettings, models: Sequence[UsableModel]
) -> tuple[dict[str, str], dict[str, str]]:
    """The local instances to probe, `{instance: wire type}` and `{instance: credential source}`:
    those serving a usable model, and every configured one no catalog document names."""
    local = {m.owned_by: m.wire_type for m in models if is_local(m)}
    sources = {m.owned_by: m.credential_source for m in models if is_local(m)}
    for setting in settings.with_prefix(PROVIDER_PREFIX):
        instance = setting.rpartition(".")[0]
        wire = builder.wire_type(instance)
        if instance not in local and wire is not None and WIRE_TYPES[wire].local:
            key = builder.key_for(wire, instance, "", builder.base_url(wire, instance))
            if key is not None:
                local[instance], sources[instance] = wire, key[1]
    return local, sources


__all__ = ["DEFAULT_TTL_SECONDS", "Hidden", "LocalProbes", "Probe", "is_local", "partition"]

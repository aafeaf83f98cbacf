"""`ProviderStatus`: what the gate would say about each of a scope's provider instances right now.

One value object per instance, computed by the same gate functions the dispatcher runs before a
call (`gate.check_static` — modality, `instance.availability()`, enabled, key —, `check_cooldown`,
then the quota as last counted), so a view can never say something other than what the dispatcher
will do. The views (`views/providers.py`) render it; the research planner reads it typed.

`keyable`: a credential resolves (keyless providers always count). `reachable`: the last outcome
of a real call in this process or replica set (true/false), None if never called. `statusText`:
the instance's own `status_text()` line (an add-on's "312 of 1000 calls left"); `domains`: the
subjects it covers (`instance_domains`), which the planner weighs.

    for status in await provider_statuses(dispatcher, scope):
        status.availability, status.gate(Modality.ACADEMIC)          # READY, GO
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config import keys as K
from ..contract.enums import Availability, Modality, Outcome, SearchDomain, Tier
from ..contract.protocol import instance_domains, protocol_tiers
from ..limits.clock import iso_utc
from .gate import GateDecision, check_cooldown, check_static, status_text
from .probe import probe_identity

if TYPE_CHECKING:
    from ..contract.protocol import ProviderInstance
    from ..contract.query import SearchScope
    from ..contract.results import QuotaStatus
    from .dispatcher import Dispatcher
    from .reachability import LastOutcome, ProbeResult

READY = "ready"
"""The routing view's word for a candidate the gate lets through."""
_EXHAUSTED = GateDecision(Outcome.SKIPPED_EXHAUSTED, "quota exhausted")


@dataclass(frozen=True, slots=True)
class ActiveCooldown:
    modality: Modality
    until: float
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"modality": self.modality.value, "until": iso_utc(self.until), "reason": self.reason}


@dataclass(frozen=True, slots=True)
class ProviderStatus:
    """One instance as the gate sees it now, per modality it serves."""

    id: str
    protocol: str
    display_name: str
    modalities: tuple[Modality, ...]
    enabled: bool
    keyable: bool
    availability: Availability
    gates: Mapping[Modality, GateDecision]
    """The gate's decision per served modality (`GateDecision.allowed` = it would be called)."""
    cooldowns: tuple[ActiveCooldown, ...] = ()
    quota: QuotaStatus | None = None
    reachable: bool | None = None
    last_error: str | None = None
    key_source: str | None = None
    proxy: str | None = None
    """The outbound proxy its calls go through (credentials masked); None = direct."""
    last_probe: ProbeResult | None = None
    """The last free reachability probe (keyless endpoints only)."""
    status_text: str | None = None
    domains: frozenset[SearchDomain] = frozenset()
    tiers: frozenset[Tier] = frozenset(Tier)

    def gate(self, modality: Modality) -> GateDecision:
        found = self.gates.get(modality)
        return found or GateDecision(Outcome.SKIPPED_UNSUPPORTED, f"does not serve {modality.value}")

    def cooldown(self, modality: Modality) -> ActiveCooldown | None:
        return next((c for c in self.cooldowns if c.modality is modality), None)

    @property
    def cooldown_until(self) -> float | None:
        return min((c.until for c in self.cooldowns), default=None)

    def to_json(self, *, admin: bool) -> dict[str, Any]:
        """A `research_providers` entry (DESIGN §6); `lastError` and `keySource` for admins only."""
        until = self.cooldown_until
        entry: dict[str, Any] = {
            "id": self.id,
            "protocol": self.protocol,
            "displayName": self.display_name,
            "modalities": sorted(m.value for m in self.modalities),
            "tiers": sorted(t.value for t in self.tiers),
            "domains": sorted(d.value for d in self.domains),
            "enabled": self.enabled,
            "keyable": self.keyable,
            "availability": self.availability.value,
            "cooldownUntil": iso_utc(until) if until is not None else None,
            "cooldowns": [c.to_json() for c in self.cooldowns],
            "quota": self.quota.to_json() if self.quota else None,
            "reachable": self.reachable,
            "statusText": self.status_text,
        }
        if self.proxy:
            entry["proxy"] = self.proxy
        if self.last_probe is not None:
            entry["lastProbe"] = self.last_probe.to_json()
        if admin:
            entry["lastError"] = self.last_error
            entry["keySource"] = self.key_source
        return entry


def is_keyable(instance: ProviderInstance) -> bool:
    return not instance.protocol.key_required or bool(instance.config.api_key)


async def provider_statuses(dispatcher: Dispatcher, scope: SearchScope) -> list[ProviderStatus]:
    """Every instance of the scope, in settings order, as the dispatcher's gate sees it now."""
    provider_set = await dispatcher.factory.providers(scope)
    now = dispatcher.clock.now()
    instances = list(provider_set.instances.values())
    subjects = [K.cooldown_subject(i.id, m) for i in instances for m in i.protocol.modalities]
    try:
        cooldowns = await dispatcher.cooldowns.get_many(scope, subjects)
    except Exception as exc:
        dispatcher.cooldown_outage.failed(exc, "the providers view shows no cooldowns")
        cooldowns = {}
    last_outcomes = await dispatcher.outcomes(scope, [i.id for i in instances])
    proxies = dispatcher.factory.transport.proxies
    statuses = []
    for instance in instances:
        modalities = tuple(sorted(instance.protocol.modalities, key=lambda m: m.value))
        gates: dict[Modality, GateDecision] = {}
        active: list[ActiveCooldown] = []
        quota: QuotaStatus | None = None
        for modality in modalities:
            cooldown = cooldowns.get(K.cooldown_subject(instance.id, modality))
            if cooldown is not None and cooldown.active(now):
                active.append(ActiveCooldown(modality, cooldown.until, cooldown.reason))
            modality_quota = (
                await dispatcher.quota.status(scope, instance, modality) if dispatcher.quota else None
            )
            quota = quota or modality_quota
            decision = check_static(instance, modality, scope)
            if decision.allowed:
                decision = check_cooldown(cooldown, now)
            if decision.allowed and modality_quota is not None and modality_quota.exhausted:
                decision = _EXHAUSTED
            gates[modality] = decision
        last = last_outcomes.get(instance.id)
        probe = dispatcher.probes.get(probe_identity(instance))
        keyable = is_keyable(instance)
        statuses.append(
            ProviderStatus(
                id=instance.id,
                protocol=instance.protocol.id,
                display_name=instance.protocol.display_name,
                modalities=modalities,
                enabled=instance.config.enabled,
                keyable=keyable,
                availability=_availability(instance, scope, keyable, quota, active),
                gates=gates,
                cooldowns=tuple(active),
                quota=quota,
                reachable=_reachable(last, probe),
                last_error=last.error if last and not last.ok else None,
                key_source=instance.config.key_source,
                # a protocol's built-in base URL is https; the instance's own one says more
                proxy=proxies.shown_for(instance.config.base_url or "https://provider.default"),
                last_probe=probe,
                status_text=status_text(instance, scope),
                domains=instance_domains(instance),
                tiers=protocol_tiers(instance.protocol),
            )
        )
    return statuses


def _reachable(last: LastOutcome | None, probe: ProbeResult | None) -> bool | None:
    """The newer of the last real call and the last probe says it; None when there is neither."""
    if probe is not None and (last is None or probe.at >= last.at):
        return probe.ok
    return last.ok if last else None


def _availability(
    instance: ProviderInstance,
    scope: SearchScope,
    keyable: bool,
    quota: QuotaStatus | None,
    cooldowns: list[ActiveCooldown],
) -> Availability:
    """The instance-wide summary: its own `availability()` where it says more than READY."""
    own = instance.availability(scope)
    if own is Availability.DISABLED or not instance.config.enabled or not keyable:
        return Availability.DISABLED
    if own is Availability.EXHAUSTED or (quota is not None and quota.exhausted):
        return Availability.EXHAUSTED
    if own is Availability.COOLDOWN or cooldowns:
        return Availability.COOLDOWN
    return Availability.READY


__all__ = ["READY", "ActiveCooldown", "ProviderStatus", "is_keyable", "provider_statuses"]

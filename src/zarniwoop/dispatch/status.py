"""Read-only views of a scope's providers: `research_providers` entries and the routing view.

`keyable`: a credential resolves (keyless providers always count). `reachable`: the last outcome
of a real call in this process or replica set (true/false), null if never called. `lastError`
only for admins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config import keys as K
from ..contract.enums import Availability, Modality, Tier
from .clock import iso_utc
from .dispatcher import order_candidates

if TYPE_CHECKING:
    from ..contract.protocol import ProviderInstance
    from ..contract.query import SearchScope
    from .dispatcher import Dispatcher


def is_keyable(instance: ProviderInstance) -> bool:
    return not instance.protocol.key_required or bool(instance.config.api_key)


async def provider_entries(
    dispatcher: Dispatcher, scope: SearchScope, *, admin: bool
) -> list[dict[str, Any]]:
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
    entries = []
    for instance in instances:
        active = []
        for modality in sorted(instance.protocol.modalities, key=lambda m: m.value):
            cooldown = cooldowns.get(K.cooldown_subject(instance.id, modality))
            if cooldown is not None and cooldown.active(now):
                active.append(
                    {"modality": modality.value, "until": iso_utc(cooldown.until), "reason": cooldown.reason}
                )
        quota = None
        if dispatcher.quota is not None:
            for modality in instance.protocol.modalities:
                quota = await dispatcher.quota.status(scope, instance, modality)
                if quota is not None:
                    break
        keyable = is_keyable(instance)
        if not instance.config.enabled or not keyable:
            availability = Availability.DISABLED
        elif quota is not None and quota.exhausted:
            availability = Availability.EXHAUSTED
        elif active:
            availability = Availability.COOLDOWN
        else:
            availability = Availability.READY
        last = last_outcomes.get(instance.id)
        entry: dict[str, Any] = {
            "id": instance.id,
            "protocol": instance.protocol.id,
            "displayName": instance.protocol.display_name,
            "modalities": sorted(m.value for m in instance.protocol.modalities),
            "enabled": instance.config.enabled,
            "keyable": keyable,
            "availability": availability.value,
            "cooldownUntil": min((c["until"] for c in active), default=None),
            "cooldowns": active,
            "quota": quota.to_json() if quota else None,
            "reachable": last.ok if last else None,
        }
        if admin:
            entry["lastError"] = last.error if last and not last.ok else None
            entry["keySource"] = instance.config.key_source
        entries.append(entry)
    return entries


async def routing_view(dispatcher: Dispatcher, scope: SearchScope, *, admin: bool) -> dict[str, Any]:
    """Per instance `keyable/available/selected/reachable`, and per modality the cascade in order."""
    entries = await provider_entries(dispatcher, scope, admin=admin)
    by_id = {e["id"]: e for e in entries}
    provider_set = await dispatcher.factory.providers(scope)
    cascades: dict[str, list[str]] = {}
    selected: set[str] = set()
    for modality in Modality:
        order = [i.id for i in order_candidates(provider_set, modality)]
        if not order:
            continue
        cascades[modality.value] = order
        ready = [
            i
            for i in order
            if by_id[i]["availability"] == "READY"
            and modality.value not in {c["modality"] for c in by_id[i]["cooldowns"]}
        ]
        if ready:
            selected.add(f"{modality.value}:{ready[0]}")
    instances = []
    for entry in entries:
        picks = sorted(s.split(":", 1)[0] for s in selected if s.split(":", 1)[1] == entry["id"])
        row = {
            "id": entry["id"],
            "protocol": entry["protocol"],
            "keyable": entry["keyable"],
            "available": entry["keyable"] and entry["enabled"] and entry["reachable"] is not False,
            "selected": bool(picks),
            "selectedFor": picks,
            "reachable": entry["reachable"],
            "cooldownUntil": entry["cooldownUntil"],
            "quota": entry["quota"],
        }
        if admin:
            row["lastError"] = entry.get("lastError")
        instances.append(row)
    return {
        "scope": {"tenant": scope.tenant, "project": scope.project},
        "search": {"instances": instances, "cascades": cascades, "tiers": [t.value for t in Tier]},
    }

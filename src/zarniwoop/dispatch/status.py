"""Read-only views of a scope's providers: `research_providers` entries and the routing view.

`keyable`: a credential resolves (keyless providers always count). `reachable`: the last outcome
of a real call in this process or replica set (true/false), null if never called. `lastError`
only for admins. `availability` also honours what the instance itself reports (an add-on saying
EXHAUSTED or COOLDOWN), and `statusText` is its `status_text()` line.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..config import keys as K
from ..contract.enums import Availability, Modality, Outcome, Tier
from ..contract.protocol import instance_domains
from .clock import iso_utc
from .dispatcher import order_candidates
from .gate import status_text

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
        reported = _reported_availability(instance, scope)
        if not instance.config.enabled or not keyable or reported is Availability.DISABLED:
            availability = Availability.DISABLED
        elif (quota is not None and quota.exhausted) or reported is Availability.EXHAUSTED:
            availability = Availability.EXHAUSTED
        elif active or reported is Availability.COOLDOWN:
            availability = Availability.COOLDOWN
        else:
            availability = Availability.READY
        last = last_outcomes.get(instance.id)
        entry: dict[str, Any] = {
            "id": instance.id,
            "protocol": instance.protocol.id,
            "displayName": instance.protocol.display_name,
            "modalities": sorted(m.value for m in instance.protocol.modalities),
            "tiers": sorted(t.value for t in instance.protocol.tiers),
            "domains": sorted(d.value for d in instance_domains(instance)),
            "enabled": instance.config.enabled,
            "keyable": keyable,
            "availability": availability.value,
            "cooldownUntil": min((c["until"] for c in active), default=None),
            "cooldowns": active,
            "quota": quota.to_json() if quota else None,
            "reachable": last.ok if last else None,
            "statusText": status_text(instance, scope),
        }
        if admin:
            entry["lastError"] = last.error if last and not last.ok else None
            entry["keySource"] = instance.config.key_source
        entries.append(entry)
    return entries


RoutingSection = Callable[["SearchScope", bool], Awaitable[Any]]
"""`(scope, admin) -> JSON`: another layer's block of the routing view (the LLM layer's alias resolutions)."""


async def routing_view(
    dispatcher: Dispatcher,
    scope: SearchScope,
    *,
    admin: bool,
    sections: Mapping[str, RoutingSection] | None = None,
) -> dict[str, Any]:
    """The routing view of `GET /v1/_routing` and `zarniwoop routing --json`.

    `search`: one entry per instance, as the loomcycle seed's search block — `id, keyable,
    available, selected, reachable` — plus `protocol, selectedFor, cooldownUntil, quota`, and
    `lastError` for admins only. `searchCascades`: per modality the candidates in the order the
    dispatcher walks them, each with the gate's verdict right now (`ready` or the `skipped_*`
    outcome it would record) and which one would be `selected` (in panic mode: the cooling one
    tried anyway, marked `panic`). Other layers add their blocks through `sections`.
    """
    entries = await provider_entries(dispatcher, scope, admin=admin)
    by_id = {e["id"]: e for e in entries}
    provider_set = await dispatcher.factory.providers(scope)
    cascades: dict[str, list[dict[str, Any]]] = {}
    picks: dict[str, list[str]] = {}
    for modality in Modality:
        order = [i.id for i in order_candidates(provider_set, modality)]
        if not order:
            continue
        steps: list[dict[str, Any]] = [
            {"id": i, "gate": _gate(by_id[i], modality), "selected": False} for i in order
        ]
        chosen = next((st for st in steps if st["gate"] == "ready"), None)
        if chosen is None:
            cooling = [
                st
                for st in steps
                if st["gate"] == Outcome.SKIPPED_COOLDOWN.value and _cooldown_until(by_id[st["id"]], modality)
            ]
            if cooling:
                chosen = min(cooling, key=lambda st: _cooldown_until(by_id[st["id"]], modality))
                chosen["panic"] = True
        if chosen is not None:
            chosen["selected"] = True
            picks.setdefault(chosen["id"], []).append(modality.value)
        cascades[modality.value] = steps
    search = []
    for entry in entries:
        row = {
            "id": entry["id"],
            "protocol": entry["protocol"],
            "keyable": entry["keyable"],
            "available": entry["keyable"]
            and entry["enabled"]
            and entry["availability"] != Availability.EXHAUSTED.value
            and entry["reachable"] is not False,
            "selected": entry["id"] in picks,
            "selectedFor": picks.get(entry["id"], []),
            "reachable": entry["reachable"],
            "cooldownUntil": entry["cooldownUntil"],
            "quota": entry["quota"],
            "statusText": entry["statusText"],
        }
        if admin:
            row["lastError"] = entry.get("lastError")
        search.append(row)
    view: dict[str, Any] = {
        "scope": {"tenant": scope.tenant, "project": scope.project},
        "search": search,
        "searchCascades": cascades,
        "tiers": [t.value for t in Tier],
    }
    for name, section in (sections or {}).items():
        view[name] = await section(scope, admin)
    return view


def _gate(entry: Mapping[str, Any], modality: Modality) -> str:
    """What the gate would say for this instance and modality now (DESIGN §5's skip outcomes)."""
    if modality.value not in entry["modalities"]:
        return Outcome.SKIPPED_UNSUPPORTED.value
    if not entry["enabled"]:
        return Outcome.SKIPPED_DISABLED.value
    if not entry["keyable"]:
        return Outcome.SKIPPED_NO_KEY.value
    if any(c["modality"] == modality.value for c in entry["cooldowns"]):
        return Outcome.SKIPPED_COOLDOWN.value
    if entry["availability"] == Availability.EXHAUSTED.value:
        return Outcome.SKIPPED_EXHAUSTED.value
    if entry["availability"] == Availability.COOLDOWN.value and not entry["cooldowns"]:
        return Outcome.SKIPPED_COOLDOWN.value  # the instance says so itself
    return "ready"


def _reported_availability(instance: ProviderInstance, scope: SearchScope) -> Availability:
    """The instance's own `availability()`; an add-on that raises there counts as READY (the gate,
    which calls it too, then records the failure as a hard error on the real call)."""
    try:
        return instance.availability(scope)
    except Exception:
        return Availability.READY


def _cooldown_until(entry: Mapping[str, Any], modality: Modality) -> str:
    return next((c["until"] for c in entry["cooldowns"] if c["modality"] == modality.value), "")

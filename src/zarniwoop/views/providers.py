"""The providers view and the search block of the routing view, rendered from `ProviderStatus`.

`provider_entries` is `research_providers` / `zarniwoop providers --json` / `GET
/v1/research/providers` (DESIGN §6; `lastError` only for admins). `routing_view` is the search
part of `GET /v1/_routing` and `zarniwoop routing --json`: the loomcycle seed's block per instance
(`id, keyable, available, selected, reachable`) plus each modality's cascade in the order the
dispatcher walks it, with the gate's verdict per candidate — both from the same statuses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..config.profiles import Profile, profiles
from ..contract.enums import Availability, Modality, Outcome, Tier
from ..dispatch.ordering import candidate_places, order_candidates
from ..dispatch.profiles import find_profile
from ..dispatch.status import READY, ProviderStatus, provider_statuses

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..dispatch.dispatcher import Dispatcher
    from ..dispatch.factory import ProviderSet

RoutingSection = Callable[["SearchScope", bool], Awaitable[Any]]
"""`(scope, admin) -> JSON`: another component's block of the routing view."""


async def provider_entries(
    dispatcher: Dispatcher, scope: SearchScope, *, admin: bool
) -> list[dict[str, Any]]:
    return [status.to_json(admin=admin) for status in await provider_statuses(dispatcher, scope)]


async def routing_view(
    dispatcher: Dispatcher,
    scope: SearchScope,
    *,
    admin: bool,
    sections: Mapping[str, RoutingSection] | None = None,
    profile: str | None = None,
) -> dict[str, Any]:
    """The routing view of `GET /v1/_routing` and `zarniwoop routing --json`.

    With a `profile` (`?profile=` / `--profile`), a `profile` block beside the global cascades: the
    profile's definition and identity and its own `searchCascades` (a modality it does not cover
    shows the global order, its places unchanged).

    `search`: one entry per instance, as the loomcycle seed's search block — `id, keyable,
    available, selected, reachable` — plus `protocol, selectedFor, cooldownUntil, quota`, and
    `lastError` for admins only. `searchCascades`: per modality the candidates in the order the
    dispatcher walks them, each with the gate's verdict right now (`ready` or the `skipped_*`
    outcome it would record), why it stands there (`place`: default, fallback, order N,
    configured, built-in) and which one would be `selected` (in panic mode: the cooling one
    tried anyway, marked `panic`). Other components add their blocks through `sections`.
    """
    statuses = await provider_statuses(dispatcher, scope)
    by_id = {s.id: s for s in statuses}
    provider_set = await dispatcher.factory.providers(scope)
    cascades = _cascades(provider_set, by_id)
    picks: dict[str, list[str]] = {}
    for modality_name, steps in cascades.items():
        chosen = next((st for st in steps if st["selected"]), None)
        if chosen is not None:
            picks.setdefault(chosen["id"], []).append(modality_name)
    search = []
    for status in statuses:
        entry = status.to_json(admin=admin)
        row = {
            "id": status.id,
            "protocol": status.protocol,
            "keyable": status.keyable,
            "available": status.keyable
            and status.enabled
            and status.availability is not Availability.EXHAUSTED
            and status.reachable is not False,
            "selected": status.id in picks,
            "selectedFor": picks.get(status.id, []),
            "reachable": status.reachable,
            "cooldownUntil": entry["cooldownUntil"],
            "quota": entry["quota"],
            "statusText": status.status_text,
        }
        if admin:
            row["lastError"] = status.last_error
        search.append(row)
    view: dict[str, Any] = {
        "scope": {"tenant": scope.tenant, "project": scope.project},
        "search": search,
        "searchCascades": cascades,
        "tiers": [t.value for t in Tier],
    }
    if profile is not None:
        found = find_profile(provider_set.settings, profile)
        view["profile"] = profile_json(found) | {"searchCascades": _cascades(provider_set, by_id, found)}
    for name, section in (sections or {}).items():
        view[name] = await section(scope, admin)
    return view


def _cascades(
    provider_set: ProviderSet, by_id: Mapping[str, ProviderStatus], profile: Profile | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Per modality the candidates in walking order (the global one, or `profile`'s), each with its
    gate verdict and place, the one the dispatcher would pick marked `selected`."""
    cascades: dict[str, list[dict[str, Any]]] = {}
    for modality in Modality:
        order = [i.id for i in order_candidates(provider_set, modality, profile=profile)]
        if not order:
            continue
        places = candidate_places(provider_set, modality)
        place = f"profile {profile.name}" if profile and profile.names_for(modality, order) else None
        steps: list[dict[str, Any]] = [
            {"id": i, "gate": _verdict(by_id[i], modality), "selected": False, "place": place or places[i]}
            for i in order
        ]
        chosen = next((st for st in steps if st["gate"] == READY), None)
        if chosen is None:
            # Panic mode tries only our own cooldowns: an instance reporting COOLDOWN itself is not called.
            cooling = [
                st
                for st in steps
                if st["gate"] == Outcome.SKIPPED_COOLDOWN.value and by_id[st["id"]].cooldown(modality)
            ]
            if cooling:
                chosen = min(cooling, key=lambda st: _cooldown_until(by_id[st["id"]], modality))
                chosen["panic"] = True
        if chosen is not None:
            chosen["selected"] = True
        cascades[modality.value] = steps
    return cascades


def profile_json(profile: Profile) -> dict[str, Any]:
    """One entry of `GET /v1/profiles` / `zarniwoop profiles --json`."""
    return {
        "name": profile.name,
        "providers": list(profile.providers),
        "modalities": {m.value: list(ids) for m, ids in profile.per_modality.items()},
        "sha256": profile.sha256,
        "level": profile.level,
    }


async def profile_entries(dispatcher: Dispatcher, scope: SearchScope) -> dict[str, Any]:
    """`{"profiles": [...]}`: every agent profile the scope's settings define."""
    settings = (await dispatcher.factory.providers(scope)).settings
    return {"profiles": [profile_json(p) for p in profiles(settings).values()]}


def _verdict(status: ProviderStatus, modality: Modality) -> str:
    """What the gate would record for this candidate now: `ready` or a `skipped_*` outcome."""
    decision = status.gate(modality)
    return READY if decision.outcome is None else decision.outcome.value


def _cooldown_until(status: ProviderStatus, modality: Modality) -> float:
    cooldown = status.cooldown(modality)
    return cooldown.until if cooldown else 0.0


__all__ = ["RoutingSection", "profile_entries", "profile_json", "provider_entries", "routing_view"]

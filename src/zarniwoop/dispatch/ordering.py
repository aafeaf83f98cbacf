"""The dispatcher's candidate ordering (DESIGN §5), pure: plain data in, an order out, no I/O.

Candidates for `(scope, modality)`: `research.default.<modality>`, then `research.fallback.<modality>`
in order, then the remaining enabled endpoints serving the modality in settings order. An agent
profile that covers the modality replaces that order by its own (`config/profiles.py`). A request's
locale reorders instances of one protocol among the places that protocol already holds. When every
candidate is cooling down, the one whose cooldown ends first is tried once anyway (panic mode).

The rules are functions over `Entry` (what an instance's place depends on) so that each is tested
on plain data (`tests/dispatch/test_ordering.py`); `order_candidates` and `candidate_places` read
those entries from a scope's `ProviderSet` for the dispatcher and the routing view.

    entries = [Entry("brave", "brave"), Entry("ddg", "duckduckgo")]
    cascade_order(entries, default="ddg", fallbacks=[])      # [ddg, brave]
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ..config import keys as K
from ..contract.protocol import ServesLanguage
from ..contract.replacing import slot_init

if TYPE_CHECKING:
    from ..config.profiles import Profile
    from ..contract.enums import Modality
    from ..contract.protocol import ProviderInstance
    from .factory import ProviderSet

T = TypeVar("T")


@slot_init
@dataclass(frozen=True, slots=True)
class Entry:
    """One instance as the ordering sees it."""

    id: str
    protocol: str
    """The protocol id: a locale reorders instances only among one protocol's places."""
    serves: bool = True
    """Whether the instance serves the modality being ordered."""
    enabled: bool = True
    language: str | None = None
    """The language it serves, normalised (`de-ch`), or None."""


def cascade_order(entries: Sequence[Entry], default: str | None, fallbacks: Sequence[str]) -> list[Entry]:
    """Default, then fallbacks in order, then the remaining enabled entries serving the modality in
    their given (settings) order. A named default/fallback stays in even when disabled or not serving
    the modality, so its skip is visible in the attempts; a name with no entry is left out."""
    by_id = {entry.id: entry for entry in entries}
    ordered: dict[str, Entry] = {}
    for instance_id in (default or "", *fallbacks):
        if instance_id and instance_id in by_id:
            ordered.setdefault(instance_id, by_id[instance_id])
    for entry in entries:
        if entry.serves and entry.enabled:
            ordered.setdefault(entry.id, entry)
    return list(ordered.values())


def profile_order(entries: Sequence[Entry], names: Sequence[str]) -> list[Entry]:
    """A profile's providers in its order, leaving out names no entry has."""
    by_id = {entry.id: entry for entry in entries}
    return [by_id[name] for name in names if name in by_id]


def normalise_language(language: str) -> str:
    return language.strip().lower().replace("_", "-")


def prefer_language(entries: Sequence[Entry], locale: str) -> list[Entry]:
    """Within each protocol's places, an exact language match first, then the same primary language;
    ties keep their order, and a protocol holding one place keeps it."""
    wanted = normalise_language(locale)
    primary = wanted.split("-")[0]

    def rank(entry: Entry) -> int:
        if entry.language is None:
            return 2
        if entry.language == wanted:
            return 0
        return 1 if entry.language.split("-")[0] == primary else 2

    places: dict[str, list[int]] = {}
    for index, entry in enumerate(entries):
        places.setdefault(entry.protocol, []).append(index)
    out = list(entries)
    for indexes in places.values():
        if len(indexes) > 1:
            members = sorted((entries[i] for i in indexes), key=rank)  # stable: ties keep their order
            for index, entry in zip(indexes, members, strict=True):
                out[index] = entry
    return out


def panic_choice(
    candidates: Sequence[T], *, allowed: Callable[[T], bool], cooling_until: Callable[[T], float | None]
) -> T | None:
    """Panic mode (Envoy's panic threshold): when no candidate may be called and some are benched by
    our own cooldowns (`cooling_until` gives the deadline, None for any other skip), the one whose
    cooldown ends first (the first of equals); else None — nothing to force."""
    if not candidates or any(allowed(c) for c in candidates):
        return None
    cooling = [
        (until, index) for index, c in enumerate(candidates) if (until := cooling_until(c)) is not None
    ]
    return candidates[min(cooling)[1]] if cooling else None


def places(
    ids: Sequence[str],
    default: str | None,
    fallbacks: Sequence[str],
    explicit_order: Mapping[str, str],
    builtin: Collection[str],
) -> dict[str, str]:
    """Why each instance stands where it does: `default`, `fallback`, `order N` (an explicit
    `.order`), `built-in` or `configured` (in the order endpoints were defined)."""
    out: dict[str, str] = {}
    if default:
        out[default] = "default"
    for instance_id in fallbacks:
        out.setdefault(instance_id, "fallback")
    for instance_id in ids:
        if instance_id in out:
            continue
        order = explicit_order.get(instance_id)
        out[instance_id] = (
            f"order {order}" if order else ("built-in" if instance_id in builtin else "configured")
        )
    return out


# --- read from a ProviderSet -------------------------------------------------------------------


def order_candidates(
    provider_set: ProviderSet,
    modality: Modality,
    locale: str | None = None,
    profile: Profile | None = None,
) -> list[ProviderInstance]:
    """The candidates of `provider_set` for `modality`: `cascade_order`, or `profile_order` when an
    agent `profile` covers the modality (a modality it does not cover keeps the global order), then
    `prefer_language` for a `locale` (`de`, `de-CH`: `wiki-de` before `wiki-en`)."""
    if profile is None:  # the global order depends on the set's settings only: once per set
        key = (modality, locale)
        known = provider_set.orders.get(key)
        if known is None:
            known = provider_set.orders[key] = tuple(_ordered(provider_set, modality, locale, None))
        return list(known)
    return _ordered(provider_set, modality, locale, profile)


def _ordered(
    provider_set: ProviderSet, modality: Modality, locale: str | None, profile: Profile | None
) -> list[ProviderInstance]:
    settings, instances = provider_set.settings, provider_set.instances
    entries = [
        Entry(
            instance_id,
            instance.protocol.id,
            modality in instance.protocol.modalities,
            instance.config.enabled,
            instance_language(instance) if locale else None,  # read only where it can matter
        )
        for instance_id, instance in instances.items()
    ]
    ordered: list[Entry] | None = None
    if profile is not None:
        names = profile.names_for(modality, [e.id for e in entries if e.serves])
        if names is not None:
            ordered = profile_order(entries, names)
    if ordered is None:
        default = settings.get(K.default_key(modality)) or ""
        ordered = cascade_order(entries, default, settings.get_list(K.fallback_key(modality)))
    if locale:
        ordered = prefer_language(ordered, locale)
    return [instances[entry.id] for entry in ordered]


def candidate_places(provider_set: ProviderSet, modality: Modality) -> dict[str, str]:
    """`places` of a scope's instances for `modality`, read from its settings."""
    settings = provider_set.settings
    explicit: dict[str, str] = {}
    builtin: set[str] = set()
    for instance_id in provider_set.instances:
        order = settings.get(K.endpoint_key(instance_id, K.SUFFIX_ORDER))
        if order:
            explicit[instance_id] = order
        protocol_row = settings.row(K.endpoint_key(instance_id, K.SUFFIX_PROTOCOL))
        if protocol_row is not None and protocol_row.level == "builtin":
            builtin.add(instance_id)
    return places(
        list(provider_set.instances),
        settings.get(K.default_key(modality)) or "",
        settings.get_list(K.fallback_key(modality)),
        explicit,
        builtin,
    )


def instance_language(instance: ProviderInstance) -> str | None:
    """The language an instance serves: its `language` extra, else what its protocol derives from the
    config (Wikipedia: the `de.` of `de.wikipedia.org`), else None."""
    language = instance.config.extra("language")
    if not language:
        protocol = instance.protocol
        language = (
            protocol.instance_language(instance.config) if isinstance(protocol, ServesLanguage) else None
        )
    return normalise_language(language) if language else None


__all__ = [
    "Entry",
    "candidate_places",
    "cascade_order",
    "instance_language",
    "normalise_language",
    "order_candidates",
    "panic_choice",
    "places",
    "prefer_language",
    "profile_order",
]

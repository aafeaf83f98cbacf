"""Agent profiles: a named, narrower cascade an agent picks for itself (issue 16, seed 003).

    research.profile.research-agent.providers = exa, brave          # every modality it covers
    research.profile.research-agent.providers.academic = arxiv      # one modality, overrides the list
    research.profile.research-agent.filters.excludeDomains = pinterest.com, quora.com  # default filters

A profile routes a modality when it names providers for it: the modality's own key, else those
of the generic list that serve the modality. The dispatcher then walks only those, in the
profile's order; a modality the profile does not cover keeps the global order, so a profile
never makes a modality go dark by omission. Profiles live in settings like any key, at any
level (system, tenant, project), narrower levels overriding per key.

A profile's content identity is the SHA-256 of its canonical definition — the sorted JSON of its
providers per modality — because the provider list changes what the agent gets back: a
different cascade, a different identity (seed 003).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..contract.enums import Modality
from ..contract.filters import FILTER_NAMES, NO_FILTERS, SearchFilters

if TYPE_CHECKING:
    from .settings import ScopedSettings

PROFILE_PREFIX = "research.profile."
_PROVIDERS = "providers"
_PROFILE_KEY = re.compile(r"^research\.profile\.(?P<name>[^.]+)\.providers(?:\.(?P<modality>[^.]+))?$")
_FILTER_KEY = re.compile(r"^research\.profile\.(?P<name>[^.]+)\.filters\.(?P<filter>[A-Za-z]+)$")
PROFILE_FILTERS: tuple[str, ...] = (*(name for name in FILTER_NAMES if name != "page"), "strictFilters")
"""The filters a profile may default (`research.profile.<name>.filters.<filter>`); a caller's own
value wins per filter. Lists are comma-separated."""


def profile_key(name: str, modality: Modality | None = None) -> str:
    key = f"{PROFILE_PREFIX}{name}.{_PROVIDERS}"
    return f"{key}.{modality.setting_name}" if modality is not None else key


def parse_profile_key(key: str) -> tuple[str, str | None] | None:
    """`(name, modality setting name or None)` of a profile key, or None for any other key."""
    match = _PROFILE_KEY.match(key)
    return (match["name"], match["modality"]) if match else None


def parse_profile_filter_key(key: str) -> tuple[str, str] | None:
    """`(name, filter)` of a profile's default-filter key, or None for any other key."""
    match = _FILTER_KEY.match(key)
    return (match["name"], match["filter"]) if match else None


@dataclass(frozen=True, slots=True)
class Profile:
    """One profile as the settings of a scope define it."""

    name: str
    providers: tuple[str, ...]
    """The generic list (`research.profile.<name>.providers`), possibly empty."""
    per_modality: Mapping[Modality, tuple[str, ...]]
    """`research.profile.<name>.providers.<modality>` lists."""
    level: str
    """The narrowest level any of its keys is set at (`system`, `tenant`, `project`, `builtin`)."""
    filters: Mapping[str, str] = field(default_factory=dict)
    """Default filters by wire name (`excludeDomains` → `a.com, b.org`), as the settings hold them."""

    def names_for(self, modality: Modality, serves: Iterable[str]) -> tuple[str, ...] | None:
        """The providers this profile walks for `modality`, or None when it does not cover it.

        `serves`: the instance ids that serve the modality (the generic list keeps only those)."""
        if modality in self.per_modality:
            return self.per_modality[modality]
        serving = set(serves)
        covered = tuple(i for i in self.providers if i in serving)
        return covered or None

    def canonical(self) -> dict[str, object]:
        """The definition the identity is computed from: its lists, modalities by setting name."""
        out: dict[str, object] = {
            "providers": list(self.providers),
            "modalities": {m.setting_name: list(ids) for m, ids in self.per_modality.items()},
        }
        if self.filters:  # defaults change what comes back: part of the identity (absent: unchanged)
            out["filters"] = dict(sorted(self.filters.items()))
        return out

    @property
    def sha256(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


_LEVEL_RANK = {"builtin": 0, "system": 1, "tenant": 2, "project": 3}


def profiles(settings: ScopedSettings) -> dict[str, Profile]:
    """Every profile the scope's settings define, by name (keys with an unknown modality skipped:
    validation reports them)."""
    found: dict[str, tuple[list[str], dict[Modality, tuple[str, ...]], str]] = {}
    defaults: dict[str, dict[str, str]] = {}
    for key in settings:
        parsed = parse_profile_key(key)
        if parsed is None:
            filtered = parse_profile_filter_key(key)
            if filtered is not None and filtered[1] in PROFILE_FILTERS:
                defaults.setdefault(filtered[0], {})[filtered[1]] = settings.get(key) or ""
                found.setdefault(filtered[0], ([], {}, "builtin"))
            continue
        name, modality_name = parsed
        generic, per_modality, level = found.setdefault(name, ([], {}, "builtin"))
        row = settings.row(key)
        row_level = row.level if row is not None else "builtin"
        if _LEVEL_RANK[row_level] > _LEVEL_RANK[level]:
            level = row_level
        ids = tuple(settings.get_list(key))
        if modality_name is None:
            generic[:] = ids
        else:
            modality = modality_by_setting_name(modality_name)
            if modality is not None:
                per_modality[modality] = ids
        found[name] = (generic, per_modality, level)
    return {
        name: Profile(name, tuple(generic), dict(per_modality), level, defaults.get(name, {}))
        for name, (generic, per_modality, level) in sorted(found.items())
    }


def default_filters(values: Mapping[str, str]) -> SearchFilters:
    """A profile's default filters as the contract's `SearchFilters`; `InvalidRequestError` naming
    the filter for a bad value (validation reports it with the setting key at start-up)."""
    if not values:
        return NO_FILTERS

    def listed(name: str) -> list[str] | None:
        raw = values.get(name)
        return [part.strip() for part in raw.split(",") if part.strip()] if raw else None

    return SearchFilters.create(
        include_domains=listed("includeDomains"),
        exclude_domains=listed("excludeDomains"),
        time_range=values.get("timeRange"),
        safe_search=values.get("safeSearch"),
        language=values.get("language"),
        region=values.get("region"),
        strict=values.get("strictFilters") or False,
    )


def modality_by_setting_name(name: str) -> Modality | None:
    return next((m for m in Modality if m.setting_name == name.lower()), None)


__all__ = [
    "PROFILE_FILTERS",
    "PROFILE_PREFIX",
    "Profile",
    "default_filters",
    "modality_by_setting_name",
    "parse_profile_filter_key",
    "parse_profile_key",
    "profile_key",
    "profiles",
]

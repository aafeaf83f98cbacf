"""Agent profiles: a named, narrower cascade an agent picks for itself (issue 16, seed 003).

    research.profile.research-agent.providers = exa, brave          # every modality it covers
    research.profile.research-agent.providers.academic = arxiv      # one modality, overrides the list

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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..contract.enums import Modality

if TYPE_CHECKING:
    from .settings import ScopedSettings

PROFILE_PREFIX = "research.profile."
_PROVIDERS = "providers"
_PROFILE_KEY = re.compile(r"^research\.profile\.(?P<name>[^.]+)\.providers(?:\.(?P<modality>[^.]+))?$")


def profile_key(name: str, modality: Modality | None = None) -> str:
    key = f"{PROFILE_PREFIX}{name}.{_PROVIDERS}"
    return f"{key}.{modality.setting_name}" if modality is not None else key


def parse_profile_key(key: str) -> tuple[str, str | None] | None:
    """`(name, modality setting name or None)` of a profile key, or None for any other key."""
    match = _PROFILE_KEY.match(key)
    return (match["name"], match["modality"]) if match else None


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
        return {
            "providers": list(self.providers),
            "modalities": {m.setting_name: list(ids) for m, ids in self.per_modality.items()},
        }

    @property
    def sha256(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


_LEVEL_RANK = {"builtin": 0, "system": 1, "tenant": 2, "project": 3}


def profiles(settings: ScopedSettings) -> dict[str, Profile]:
    """Every profile the scope's settings define, by name (keys with an unknown modality skipped:
    validation reports them)."""
    found: dict[str, tuple[list[str], dict[Modality, tuple[str, ...]], str]] = {}
    for key in settings:
        parsed = parse_profile_key(key)
        if parsed is None:
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
        name: Profile(name, tuple(generic), dict(per_modality), level)
        for name, (generic, per_modality, level) in sorted(found.items())
    }


def modality_by_setting_name(name: str) -> Modality | None:
    return next((m for m in Modality if m.setting_name == name.lower()), None)


__all__ = [
    "PROFILE_PREFIX",
    "Profile",
    "modality_by_setting_name",
    "parse_profile_key",
    "profile_key",
    "profiles",
]

"""Which model for a purpose (seed 002 §3): a purpose → a model spec.

**Purpose → model spec** (the preferences cascade): the call's own overrides (a process's
`llm_overrides`), then the project's and the account's `llm_overrides`, then `<purpose>_model` in
the preferences of the project, the account, the team and the tenant, then `default_model` in the
same order; with nothing configured the spec is `default:<purpose>`, which the alias resolver turns
into `ai.alias.default.<purpose>` or the tenant default (`ai.default.provider/model`). A bare model
name (`claude-sonnet-4`, as the seed writes them) gets the provider of a configured entry with that
model, else the provider its name says (`claude-…` → anthropic, `gemini-…` → gemini, `gpt-…` → openai).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...contract.errors import ConfigError
from ...tenancy.levels import ORG_LEVELS, PREFERENCE_LEVELS

if TYPE_CHECKING:
    from ...tenancy.accounts import CallScope

_NAME_HINTS = (("claude", "anthropic"), ("gemini", "gemini"), ("gemma", "gemini"), ("gpt-", "openai"), ("o1", "openai"),
               ("o3", "openai"), ("o4", "openai"), ("deepseek", "deepseek"))  # fmt: skip


@dataclass(frozen=True, slots=True)
class SpecChoice:
    spec: str
    source: str
    """Where the spec came from: `override`, `project.llm_overrides`, `account.preferences.light_model`, `default`."""


def model_spec(purpose: str, scope: CallScope, overrides: Mapping[str, str] | None = None) -> SpecChoice:
    """The model spec for a purpose under a scope (the preferences cascade)."""
    key = f"{purpose}_model"
    if overrides and overrides.get(purpose):
        return SpecChoice(_qualify(overrides[purpose], scope), "override")
    for level in ("project", "account"):
        cfg = scope.config(level)
        if cfg is not None and cfg.llm_overrides.get(purpose):
            return SpecChoice(_qualify(cfg.llm_overrides[purpose], scope), f"{level}.llm_overrides")
    for pref in (key, "default_model"):
        for level in PREFERENCE_LEVELS:
            cfg = scope.config(level)
            if cfg is not None and cfg.preferences.get(pref):
                return SpecChoice(_qualify(cfg.preferences[pref], scope), f"{level}.preferences.{pref}")
    return SpecChoice(f"default:{purpose}", "default")


def _qualify(value: str, scope: CallScope) -> str:
    """`claude-sonnet-4` → `anthropic:claude-sonnet-4`; a spec with a prefix (or a cascade) stays."""
    value = value.strip()
    if ":" in value or "," in value:
        return value
    for level in ORG_LEVELS:
        cfg = scope.config(level)
        for entry in cfg.providers if cfg is not None else ():
            if entry.model == value:
                return f"{entry.instance}:{value}"
    lowered = value.lower()
    for prefix, provider in _NAME_HINTS:
        if lowered.startswith(prefix):
            return f"{provider}:{value}"
    raise ConfigError(
        "preferences",
        f"model {value!r} has no provider: write it as <provider>:<model> (e.g. anthropic:{value})",
    )


__all__ = ["SpecChoice", "model_spec"]

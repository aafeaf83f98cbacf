"""Boot validation of the `ai.*` settings: what would otherwise only fail at the first LLM call.

Checked per scope: every `ai.provider.<instance>.type` names a wire type; `ai.default.provider`
names a wire type or a named instance; no configured alias is part of a cycle, deeper than 8, or
malformed. An alias whose target is merely *not configured* in this scope is not an error here:
an inner scope (a tenant, a project) may well configure it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config.validate import scope_problems
from ..contract.errors import ConfigError, UnknownModelError
from .adapters.wire import WIRE_TYPES
from .choice.aliases import ALIAS_PREFIX, DEFAULT_PROVIDER_KEY, FALLBACK_SUFFIX, resolve, split_fallbacks

STRUCTURAL = frozenset({"cycle", "too_deep", "malformed", "unknown_type"})

if TYPE_CHECKING:
    from ..config.settings import ScopedSettings, SettingService


def validate_ai_scope(settings: ScopedSettings) -> list[ConfigError]:
    errors: list[ConfigError] = []
    for key in settings:
        if key.startswith("ai.provider.") and key.endswith(".type"):
            value = (settings.get(key) or "").strip()
            if value not in WIRE_TYPES:
                errors.append(
                    ConfigError(
                        key, f"unknown provider type {value!r}; expected one of {', '.join(WIRE_TYPES)}"
                    )
                )
    provider = (settings.get(DEFAULT_PROVIDER_KEY) or "").strip()
    if provider and provider not in WIRE_TYPES and not settings.get(f"ai.provider.{provider}.type"):
        errors.append(
            ConfigError(
                DEFAULT_PROVIDER_KEY,
                f"{provider!r} is neither a provider type ({', '.join(WIRE_TYPES)}) nor a named instance "
                f"(setting ai.provider.{provider}.type)",
            )
        )
    for key in settings:
        if not key.startswith(ALIAS_PREFIX):
            continue
        if key.endswith(FALLBACK_SUFFIX):
            errors += _fallback_errors(key, settings)
            continue
        prefix, _, rest = key[len(ALIAS_PREFIX) :].partition(".")
        try:
            resolve(f"{prefix}:{rest}", settings)
        except UnknownModelError as exc:
            if exc.code in STRUCTURAL:
                errors.append(ConfigError(key, exc.reason))
    return errors


def _fallback_errors(key: str, settings: ScopedSettings) -> list[ConfigError]:
    """A fallback chain's specs must be well-formed (whether they resolve may depend on the scope)."""
    for spec in split_fallbacks(settings.get(key) or ""):
        try:
            resolve(spec, settings)
        except UnknownModelError as exc:
            if exc.code in STRUCTURAL:
                return [ConfigError(key, f"fallback {spec!r}: {exc.reason}")]
    return []


def validate_ai_settings(service: SettingService) -> list[ConfigError]:
    """Every `ai.*` problem in every scope that has settings (empty list = valid)."""
    return scope_problems(service, validate_ai_scope)

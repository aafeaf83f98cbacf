"""Whose key for a model (seed 002 §7): the credential cascade.

**Model → key** (the credential cascade, `credential_source` records where it came from):

    a. account  → an account `providers` entry for this instance (one naming this model first; a key
                  is the vendor's, so an entry for another model of the same instance also counts)
    b. project  → a project entry
    c. team     → a team entry
    d. tenant   → a tenant entry; else `ai.provider.<instance>.apiKey` in settings (project/tenant row)
    e. operator → the operator's environment (`ANTHROPIC_API_KEY`, …) unless `ai.operatorKeys: deny`
    f. local    → keyless local servers (Ollama, LM Studio) need none
    g. nothing  → this candidate cannot run

An entry's `api_key_ref` names a credential at the entry's own level, else at the tenant level.
The operator's key of a wire type is only ever sent to that vendor's own endpoint or to a base URL
set at the system level — never to a base URL a tenant chose; a named instance gets its own
`<INSTANCE>_API_KEY`, never the vendor's.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ...config.trust import guarded, set_by_operator, untrusted_llm_endpoint
from ...contract.protocol import Secret
from ...tenancy.levels import ORG_LEVELS
from ...tenancy.llm_config import PROVIDER_ALIASES, ProviderEntry
from ..adapters.wire import WIRE_TYPES, base_url_for, uses_default_endpoint
from ..failover import Candidate

if TYPE_CHECKING:
    from ...config.settings import ScopedSettings
    from ...tenancy.accounts import CallScope
    from ...tenancy.credentials import CredentialStore
    from .aliases import Resolution

log = logging.getLogger("zarniwoop.llm.choice.key")

OPERATOR_KEYS = "ai.operatorKeys"


class CandidateBuilder:
    """Turns a resolution and the scope's provider entries into keyed `Candidate`s."""

    def __init__(
        self,
        scope: CallScope,
        settings: ScopedSettings,
        credentials: CredentialStore,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.scope = scope
        self.settings = settings
        self.credentials = credentials
        self.environ = os.environ if environ is None else environ
        self.missing: list[str] = []
        """Why candidates could not be built (no key, unknown provider), for the error message."""
        self.environ_read: dict[str, str | None] = {}
        """The operator variables the cascade read, with their values: a plan built from them
        holds while they are unchanged (`prepare.CallMemory`)."""

    # -- instance facts ------------------------------------------------------------------------

    def wire_type(self, instance: str) -> str | None:
        instance = PROVIDER_ALIASES.get(instance, instance)
        if instance in WIRE_TYPES:
            return instance
        configured = self.settings.get(f"ai.provider.{instance}.type")
        return configured if configured in WIRE_TYPES else None

    def base_url(self, wire: str, instance: str, entry: ProviderEntry | None = None) -> str:
        configured = (entry.endpoint if entry is not None else None) or self.settings.get(
            f"ai.provider.{instance}.baseUrl"
        )
        return base_url_for(wire, configured)

    def untrusted(self, instance: str, entry: ProviderEntry | None = None) -> tuple[bool, bool]:
        """`(untrusted, guarded)` of the instance's base URL: a `ai.provider.<instance>.baseUrl` row
        below system level is a tenant's choice (an entry's own `endpoint` comes from the operator's
        tenant tree, so it is not)."""
        if entry is not None and entry.endpoint:
            return False, False
        untrusted = untrusted_llm_endpoint(self.settings, instance)
        return untrusted, guarded(self.settings, untrusted)

    # -- keys -------------------------------------------------------------------------------

    def key_for(
        self, wire: str, instance: str, model: str, base_url: str
    ) -> tuple[Secret | None, str] | None:
        """Walk the cascade for `instance`/`model`; `(key or None, credential_source)` or None."""
        for level in ORG_LEVELS:
            owner = self.scope.owner(level)
            cfg = self.scope.config(level)
            if owner is None or cfg is None:
                continue
            # A key is the vendor's, not one model's: an entry naming this model is preferred, but an
            # entry of the same instance for another model still supplies this level's key.
            entries = [e for e in cfg.providers if e.instance == instance]
            entries.sort(key=lambda e: 0 if e.model in (None, model) else 1)
            for entry in entries:
                found = self.entry_key(level, owner, entry)
                if found is not None:
                    return found
        setting = self._setting_key(instance)
        if setting is not None:
            return setting
        operator = self._operator_key(wire, instance, base_url)
        if operator is not None:
            return operator
        if not WIRE_TYPES[wire].key_required or WIRE_TYPES[wire].local:
            return None, "local"
        return None

    def entry_key(self, level: str, owner: str, entry: ProviderEntry) -> tuple[Secret | None, str] | None:
        if entry.api_key_ref:
            chain = [(level, owner), ("tenant", None)] if level != "tenant" else [("tenant", None)]
            found = self.credentials.find(self.scope.tenant, chain, entry.api_key_ref)
            if found is None:
                self.missing.append(f"{level} {owner}: credential {entry.api_key_ref!r} is not in the store")
                log.warning("credential %r of %s %s is not in the store", entry.api_key_ref, level, owner)
                return None
            return found[0], level
        wire = self.wire_type(entry.instance)
        vendor = WIRE_TYPES.get(wire or "")
        if entry.local or (vendor is not None and not vendor.key_required):
            return None, "local" if entry.local or (vendor is not None and vendor.local) else level
        return None  # an entry without a key: the cascade goes on looking for one

    def _setting_key(self, instance: str) -> tuple[Secret, str] | None:
        key = f"ai.provider.{instance}.apiKey"
        secret = self.settings.secret(key)
        if not secret:
            return None
        row = self.settings.row(key)
        level = row.level if row is not None else "tenant"
        return secret, {"project": "project", "tenant": "tenant"}.get(level, "operator")

    def _operator_key(self, wire: str, instance: str, base_url: str) -> tuple[Secret, str] | None:
        if (self.settings.get(OPERATOR_KEYS) or "allow").strip().lower() == "deny":
            return None
        if not self._operator_endpoint(wire, instance, base_url):
            return None
        for name in self.operator_env(wire, instance):
            value = self.environ_read[name] = self.environ.get(name)
            if value:
                return Secret(value), "operator"
        return None

    @staticmethod
    def operator_env(wire: str, instance: str) -> tuple[str, ...]:
        """The operator variables that may key `instance`: the vendor record's own (`env_keys`) for its
        default instance; a named instance or a gateway only its own, never the vendor's key."""
        if instance == wire:
            return WIRE_TYPES[wire].env_keys
        return (instance.upper().replace("-", "_").replace(".", "_") + "_API_KEY",)

    def _operator_endpoint(self, wire: str, instance: str, base_url: str) -> bool:
        """The operator's key may only go where the operator sends it: the vendor's own endpoint, or
        a base URL set at the system level. A tenant pointing `ai.provider.openai.baseUrl` at its own
        server must not receive the operator's OPENAI_API_KEY."""
        if instance == wire and uses_default_endpoint(wire, base_url):
            return True
        key = f"ai.provider.{instance}.baseUrl"
        row = self.settings.row(key)
        return (
            row is not None
            and set_by_operator(self.settings, key)
            and base_url_for(wire, row.value) == base_url
        )

    # -- candidates ---------------------------------------------------------------------------

    def primary(self, resolution: Resolution) -> Candidate | None:
        wire, instance, model = resolution.protocol_type, resolution.instance, resolution.model
        entry = self._entry_for(instance, model)
        base = self.base_url(wire, instance, entry)
        found = self.key_for(wire, instance, model, base)
        if found is None:
            self.missing.append(f"{instance}: no key (account, project, team, tenant{self._operator_note()})")
            return None
        key, source = found
        untrusted, guard = self.untrusted(instance, entry)
        return Candidate(
            wire_type=wire,
            instance=instance,
            model=model,
            base_url=base,
            untrusted=untrusted,
            guarded=guard,
            api_key=key,
            credential_source=source,
            priority=entry.priority if entry else 0,
            unlimited=bool(entry and entry.unlimited),
            local=bool(entry and entry.local) or source == "local",
        )

    def searched(self, wire: str, instance: str) -> tuple[str, ...]:
        """Every place the cascade looked for `instance`'s key, in order (for a missing-key error)."""
        places = [
            f"{level} {self.scope.tenant if level == 'tenant' else self.scope.owner(level)}"
            for level in ORG_LEVELS
            if self.scope.owner(level)
        ]
        places.append(f"setting ai.provider.{instance}.apiKey")
        if (self.settings.get(OPERATOR_KEYS) or "allow").strip().lower() == "deny":
            places.append("operator environment (operator keys denied by ai.operatorKeys)")
        else:
            names = self.operator_env(wire, instance)
            places.append("operator environment " + "/".join(names) if names else "operator environment")
        return tuple(places)

    def _entry_for(self, instance: str, model: str) -> ProviderEntry | None:
        for level in ORG_LEVELS:
            cfg = self.scope.config(level)
            for entry in cfg.providers if cfg is not None else ():
                if entry.instance == instance and (entry.model in (None, model)):
                    return entry
        return None

    def _operator_note(self) -> str:
        denied = (self.settings.get(OPERATOR_KEYS) or "allow").strip().lower() == "deny"
        return ", operator keys denied" if denied else ", operator environment"

"""Which candidates a call tries, in which order — and what happens when the asked-for one has no key.

    1. the resolved model (its key from the cascade)
    2. the runtime fallback chain: the call's `fallback_models` (a recipe's `params.fallbackModels`),
       then `ai.alias.<prefix>.<rest>.fallback` of every alias on the resolution path
    3. the other configured entries by priority (when `failover.fallback_enabled`)
    4. local entries (when `failover.fallback_to_local`)

`failover_policy(scope)` is the innermost level's `failover` block; `configured_fallbacks` gives (3)
and (4), each entry with its own key. Each (instance, model) appears once, at its first place. A chain element that resolves nowhere or
has no key is skipped with a warning; it is never replaced by another provider.

No silent substitution: when (1) has no key anywhere, `plan_candidates` raises
`MissingCredentialError` naming the provider and every place searched — unless the scope sets
`ai.substitute: true`; then the first other candidate stands in, and the returned `Switch` says so
(the manager puts it on the result's `failover` and on the usage record).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from ...contract.errors import MissingCredentialError, UnknownModelError, UnsafeValueError
from ...ledger import Switch
from ...tenancy.levels import ORG_LEVELS, PREFERENCE_LEVELS
from ...tenancy.llm_config import FailoverPolicy
from ..failover import Candidate
from .aliases import alias_fallbacks, resolve

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...config.settings import ScopedSettings
    from ...tenancy.accounts import CallScope
    from .aliases import Resolution
    from .key import CandidateBuilder

log = logging.getLogger("zarniwoop.llm")

SUBSTITUTE_KEY = "ai.substitute"
"""`true`: a spec whose provider has no key may be served by another configured provider (recorded)."""


def failover_policy(scope: CallScope) -> FailoverPolicy:
    """The innermost level's `failover` block (project, account, team, tenant), else the seed's defaults."""
    for level in PREFERENCE_LEVELS:
        cfg = scope.config(level)
        if cfg is not None and cfg.failover is not None:
            return cfg.failover
    return FailoverPolicy()


def plan_candidates(
    builder: CandidateBuilder,
    resolution: Resolution,
    spec: str,
    settings: ScopedSettings,
    policy: FailoverPolicy,
    fallback_models: Sequence[str] = (),
) -> tuple[list[Candidate], Switch | None]:
    """The candidates in order, and the substitution switch (None when the primary has its key)."""
    primary = builder.primary(resolution)
    if primary is None and not settings.get_bool(SUBSTITUTE_KEY, False):
        raise MissingCredentialError(
            resolution.instance, spec, builder.searched(resolution.protocol_type, resolution.instance)
        )
    chain = fallback_chain(builder, [*fallback_models, *alias_fallbacks(resolution.path, settings)], settings)
    candidates = _unique(
        [*([primary] if primary else []), *chain, *configured_fallbacks(builder, primary, resolution, policy)]
    )
    return candidates, (_substitute(resolution, candidates) if primary is None else None)


def fallback_chain(
    builder: CandidateBuilder, specs: Sequence[str], settings: ScopedSettings
) -> list[Candidate]:
    """A keyed candidate per spec of the runtime chain (each may be a comma cascade)."""
    out: list[Candidate] = []
    for spec in dict.fromkeys(specs):
        try:
            resolution = resolve(spec, settings)
        except UnknownModelError as exc:
            log.warning("fallback model %r skipped: %s", spec, exc.reason)
            builder.missing.append(f"fallback {spec!r}: {exc.reason}")
            continue
        except UnsafeValueError as exc:  # never skipped quietly: it is an attempt at the vendor's paths
            raise UnsafeValueError("fallback_models", exc.reason) from None
        candidate = builder.primary(resolution)
        if candidate is None:
            log.warning("fallback model %r skipped: no %s key", spec, resolution.instance)
            continue
        out.append(replace(candidate, origin="fallbackModels"))
    return out


def configured_fallbacks(
    builder: CandidateBuilder, primary: Candidate | None, resolution: Resolution, policy: FailoverPolicy
) -> list[Candidate]:
    """Other configured entries by priority, then local ones, each with its own key."""
    seen = {(primary.instance, primary.model)} if primary else {(resolution.instance, resolution.model)}
    cloud: list[tuple[int, int, Candidate]] = []
    local: list[tuple[int, int, Candidate]] = []
    order = 0
    for level in ORG_LEVELS:
        cfg = builder.scope.config(level)
        for entry in cfg.providers if cfg is not None else ():
            order += 1
            wire = builder.wire_type(entry.instance)
            if wire is None:
                builder.missing.append(f"{level} entry {entry.provider!r}: unknown provider")
                continue
            model = entry.model or (resolution.model if entry.instance == resolution.instance else None)
            if model is None or (entry.instance, model) in seen:
                continue
            base = builder.base_url(wire, entry.instance, entry)
            found = builder.entry_key(level, builder.scope.owner(level) or "", entry) or builder.key_for(
                wire, entry.instance, model, base
            )
            if found is None:
                continue
            seen.add((entry.instance, model))
            untrusted, guard = builder.untrusted(entry.instance, entry)
            candidate = Candidate(
                wire_type=wire,
                instance=entry.instance,
                model=model,
                base_url=base,
                untrusted=untrusted,
                guarded=guard,
                api_key=found[0],
                credential_source=found[1],
                priority=entry.priority,
                unlimited=entry.unlimited,
                local=entry.local or found[1] == "local",
                origin="local" if entry.local or found[1] == "local" else "priority",
            )
            (local if candidate.local else cloud).append((entry.priority, order, candidate))
    out: list[Candidate] = []
    if policy.fallback_enabled:
        out += [c for _, _, c in sorted(cloud, key=lambda t: (t[0], t[1]))]
    if policy.fallback_to_local:
        out += [c for _, _, c in sorted(local, key=lambda t: (t[0], t[1]))]
    return out


def _unique(candidates: Sequence[Candidate]) -> list[Candidate]:
    """First occurrence of each (instance, model) wins."""
    seen: set[tuple[str, str]] = set()
    out = []
    for candidate in candidates:
        if (candidate.instance, candidate.model) not in seen:
            seen.add((candidate.instance, candidate.model))
            out.append(candidate)
    return out


def _substitute(resolution: Resolution, candidates: list[Candidate]) -> Switch | None:
    """`ai.substitute`: the first other candidate stands in (marked, logged, recorded as a switch)."""
    if not candidates:
        return None
    stand_in = candidates[0] = replace(candidates[0], origin="substitute")
    log.warning(
        "no key for %s: %s:%s substituted (ai.substitute)",
        resolution.instance,
        stand_in.instance,
        stand_in.model,
    )
    return Switch(
        from_instance=resolution.instance,
        to_instance=stand_in.instance,
        reason=f"no {resolution.instance} key (ai.substitute)",
    )

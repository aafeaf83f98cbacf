"""The pre-dispatch gate: may this instance be called for this modality right now?

Order of checks: modality and tier supported → enabled → key → the instance's own availability
(an add-on may report EXHAUSTED or COOLDOWN itself) → the filters, with `strictFilters` → cooldown
→ quota. Each "no" becomes an
attempt with a `skipped_*` outcome and costs no time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..contract.enums import Availability, Modality, Outcome, Tier
from ..contract.filters import DOMAIN_FILTERS
from ..contract.protocol import protocol_filters, protocol_tiers
from ..contract.replacing import slot_init

if TYPE_CHECKING:
    from ..contract.filters import SearchFilters
    from ..contract.protocol import ProviderInstance
    from ..contract.query import SearchScope
    from ..contract.results import QuotaStatus
    from .cooldown import Cooldown


class QuotaGuard(Protocol):
    """Quotas (`quota.LocalQuotaGuard`). `reserve` is atomic: True = this call may go out, and it
    has been counted; False = exhausted (a skip, no cooldown)."""

    async def reserve(self, scope: SearchScope, instance: ProviderInstance, modality: Modality) -> bool: ...

    async def status(
        self, scope: SearchScope, instance: ProviderInstance, modality: Modality
    ) -> QuotaStatus | None: ...

    async def observe(
        self, scope: SearchScope, instance: ProviderInstance, modality: Modality, reported: QuotaStatus
    ) -> None:
        """A quota the provider reported with an answer (`SearchResult.quota`)."""
        ...


@slot_init
@dataclass(frozen=True, slots=True)
class GateDecision:
    outcome: Outcome | None  # None = go
    reason: str | None = None
    cooldown: Cooldown | None = None

    @property
    def allowed(self) -> bool:
        return self.outcome is None


GO = GateDecision(None)


def check_static(
    instance: ProviderInstance, modality: Modality, scope: SearchScope, tier: Tier = Tier.NORMAL
) -> GateDecision:
    """The checks that need no I/O: modality, tier, enabled, key, the instance's own availability."""
    if modality not in instance.protocol.modalities:
        return GateDecision(Outcome.SKIPPED_UNSUPPORTED, f"does not serve {modality.value}")
    if tier not in protocol_tiers(instance.protocol):
        return GateDecision(Outcome.SKIPPED_UNSUPPORTED, f"does not support the {tier.value} tier")
    availability = instance.availability(scope)
    if availability is Availability.DISABLED or not instance.config.enabled:
        return GateDecision(Outcome.SKIPPED_DISABLED, "disabled")
    if instance.protocol.key_required and not instance.config.api_key:
        return GateDecision(Outcome.SKIPPED_NO_KEY, "no API key configured")
    if availability is Availability.EXHAUSTED:
        return GateDecision(Outcome.SKIPPED_EXHAUSTED, _reported(instance, scope, "quota exhausted"))
    if availability is Availability.COOLDOWN:
        return GateDecision(Outcome.SKIPPED_COOLDOWN, _reported(instance, scope, "cooling down"))
    return GO


def check_filters(instance: ProviderInstance, filters: SearchFilters) -> GateDecision:
    """`strictFilters`: a candidate whose protocol declares no support for a set filter (domain
    filters aside: the dispatcher applies those to any provider's hits) is skipped."""
    supported = protocol_filters(instance.protocol)
    missing = [
        n for n in filters.requested() if n not in supported and n not in DOMAIN_FILTERS and n != "page"
    ]
    if missing:
        return GateDecision(
            Outcome.SKIPPED_UNSUPPORTED, f"cannot honour {', '.join(missing)} (strictFilters)"
        )
    return GO


def status_text(instance: ProviderInstance, scope: SearchScope) -> str | None:
    """The instance's `status_text()`, never raising: an add-on's status line is untrusted."""
    try:
        text = instance.status_text(scope)
    except Exception:
        return None
    return " ".join(text.split())[:300] if isinstance(text, str) and text.strip() else None


def _reported(instance: ProviderInstance, scope: SearchScope, what: str) -> str:
    """`"quota exhausted (reported by the instance: 0 of 100 left)"`: the instance said so, not our counters."""
    text = status_text(instance, scope)
    return f"{what} (reported by the instance{': ' + text if text else ''})"


def check_cooldown(cooldown: Cooldown | None, now: float) -> GateDecision:
    if cooldown is not None and cooldown.active(now):
        return GateDecision(
            Outcome.SKIPPED_COOLDOWN,
            f"cooling down for {cooldown.until - now:.0f}s ({cooldown.reason})",
            cooldown,
        )
    return GO

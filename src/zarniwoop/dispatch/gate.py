"""The pre-dispatch gate: may this instance be called for this modality right now?

Order of checks: modality supported → enabled → key → cooldown → quota. Each "no" becomes an
attempt with a `skipped_*` outcome and costs no time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..contract.enums import Availability, Modality, Outcome

if TYPE_CHECKING:
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


@dataclass(frozen=True, slots=True)
class GateDecision:
    outcome: Outcome | None  # None = go
    reason: str | None = None
    cooldown: Cooldown | None = None

    @property
    def allowed(self) -> bool:
        return self.outcome is None


GO = GateDecision(None)


def check_static(instance: ProviderInstance, modality: Modality, scope: SearchScope) -> GateDecision:
    """The checks that need no I/O: modality, enabled, key."""
    if modality not in instance.protocol.modalities:
        return GateDecision(Outcome.SKIPPED_UNSUPPORTED, f"does not serve {modality.value}")
    if instance.availability(scope) is Availability.DISABLED or not instance.config.enabled:
        return GateDecision(Outcome.SKIPPED_DISABLED, "disabled")
    if instance.protocol.key_required and not instance.config.api_key:
        return GateDecision(Outcome.SKIPPED_NO_KEY, "no API key configured")
    return GO


def check_cooldown(cooldown: Cooldown | None, now: float) -> GateDecision:
    if cooldown is not None and cooldown.active(now):
        return GateDecision(
            Outcome.SKIPPED_COOLDOWN,
            f"cooling down for {cooldown.until - now:.0f}s ({cooldown.reason})",
            cooldown,
        )
    return GO

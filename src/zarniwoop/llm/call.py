"""The values of one LLM call: who asks (`LlmCall`), what was decided before the first byte left
(`PreparedCall`), and what came back (`LlmResult`); and the parts a call runs through (`CallParts`).

The three values are frozen: the manager builds a `PreparedCall` once per call and every later
step — each failover attempt, the settle, the observers — reads the same decisions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..config.settings import ScopedSettings, SettingService
    from ..contract.query import SearchScope
    from ..ledger import AttemptRecord, Switch, UsageStore
    from ..limits.budgets import Budgets, Hold, LineStatus, QuotaLine
    from ..limits.clock import Clock
    from ..limits.windows import AdmissionWindows, RateLine
    from ..storage.db import Database
    from ..tenancy.accounts import CallScope, OrgDirectory
    from ..tenancy.credentials import CredentialStore
    from ..transport.http import HttpTransport
    from .adapters import ChatRequest
    from .adapters.response import ChatResponse, TokenUsage, ToolCall
    from .catalog import Catalog, ModelDoc
    from .choice.aliases import Resolution
    from .choice.model import SpecChoice
    from .failover import Candidate, FailoverEngine
    from .observers import LlmObserver


class CallParts(Protocol):
    """What a call runs through: the stores, the budgets, the transport. `LlmManager` is one; the
    steps of a call (`prepare.py`, `attempt.py`, `finish.py`, `streaming.py`) read it per call, so
    a part swapped on the manager (a test's recorder of sleeps) is the one the next call uses."""

    db: Database
    settings: SettingService
    credentials: CredentialStore
    directory: OrgDirectory
    ledger: Budgets
    usage: UsageStore
    http: HttpTransport
    rate: AdmissionWindows
    observers: tuple[LlmObserver, ...]
    clock: Clock
    environ: Mapping[str, str]

    async def catalog(self) -> Catalog | None:
        """The model catalog; None when the manager runs without one."""
        ...


@dataclass(frozen=True, slots=True)
class LlmCall:
    """Who a call runs for, and why."""

    tenant: str = "default"
    project: str = "default"
    account: str = "default"
    purpose: str = "default"
    model: str | None = None
    """A model spec for this call only (the innermost override): anything the alias resolver takes
    (`anthropic:claude-sonnet-4-5`, `default:analyze`, a comma cascade `default:arthur,default:chat`)
    or `purpose:<name>` (the preferences cascade picks that purpose's model)."""
    overrides: Mapping[str, str] = field(default_factory=dict)
    """The process's `llm_overrides`: purpose → model spec."""
    team: str | None = None
    session_id: str | None = None
    think_process_id: str | None = None
    node_id: str | None = None
    fallback_models: tuple[str, ...] = ()
    """The runtime fallback chain (seed 002 `params.fallbackModels`): specs tried in order after the
    primary model was really called and failed (provider error, overload, quota). Each may be a
    comma cascade."""
    check_token: str | None = None
    """The id of an API token the gateway took from memory (`TokenStore.recall`), not yet confirmed
    unrevoked: the first attempt's reservation confirms it in its own round trip (`reserve(token=…)`),
    or it is checked alone before the first byte; revoked, the call is a `RevokedTokenError`."""


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model a call would run on (`LlmManager.choose_model`), before any key or budget."""

    spec: str
    purpose: str
    resolution: Resolution
    doc: ModelDoc | None
    """Its catalog entry (`size`, `traits`, pricing); None without a catalog."""


@dataclass(frozen=True, slots=True)
class PreparedCall:
    """Everything decided before the first byte leaves: scope, budgets, model, keys, candidates."""

    call: LlmCall
    scope_key: SearchScope
    scope: CallScope
    settings: ScopedSettings
    lines: tuple[QuotaLine, ...]
    """Every quota line of the call's levels (reserved and settled together)."""
    purpose: str
    """The purpose that ran: the requested one, or `light` at 95 % of a budget."""
    choice: SpecChoice
    resolution: Resolution
    candidates: tuple[Candidate, ...]
    """In the order the failover engine tries them; empty only when a budget blocks everything."""
    request: ChatRequest
    """The request as sent (`max_tokens` capped by `max_tokens_per_call`)."""
    estimate: int
    """Tokens reserved per attempt: the input estimate plus `max_tokens`."""
    engine: FailoverEngine
    catalog: Catalog | None
    timeout: float
    """Seconds one upstream exchange may take (`ai.call.timeoutMs`)."""
    persist_trace: bool
    """`ai.trace.persist`: write the raw exchange to `llm_traces`."""
    webhook_url: str | None
    """`ai.quota.webhookUrl`, where threshold notices go."""
    webhook_guarded: bool = False
    """A tenant or project set `webhook_url`: the POST passes the SSRF policy (`config/trust.py`)."""
    rate_lines: tuple[RateLine, ...] = ()
    """Every per-minute limit of the call's levels."""
    rate_window: float = 60.0
    """The sliding window the per-minute limits count over (`ai.rateLimit.windowSeconds`)."""
    substitution: Switch | None = None
    """Set when the requested provider had no key and `ai.substitute` let another serve."""
    blocked: LineStatus | None = None
    """The first exhausted line, when a budget is at 100 %."""
    drain: float = 30.0
    """Seconds an abandoned call may run on to learn its usage (`ai.call.drainMs`, `settlement.py`)."""
    first_hold: FirstHold | None = None
    """The first attempt's budget hold, reserved by `prepare` (None: each attempt reserves its own)."""


class FirstHold:
    """The hold `prepare` reserved for the first attempt (its check doubled as the budgets' read:
    `prepare._hold_below_light`). The first attempt that holds anything takes it; a call that ends
    without one taking it releases it (`settlement.release_first_hold`), so it never waits for its expiry."""

    __slots__ = ("hold",)

    def __init__(self, hold: Hold) -> None:
        self.hold: Hold | None = hold

    def take(self) -> Hold | None:
        hold, self.hold = self.hold, None
        return hold


@dataclass(frozen=True, slots=True)
class LlmResult:
    response: ChatResponse
    provider_type: str
    instance: str
    model: str
    credential_source: str
    usage: TokenUsage
    cost_usd: float | None
    purpose: str
    requested_purpose: str
    spec: str
    failover: tuple[Switch, ...] = ()
    attempts: tuple[AttemptRecord, ...] = ()
    usage_id: str = ""
    duration_ms: int = 0
    origin: str = "primary"
    """Why what served was a candidate: `primary`, `fallbackModels`, `priority`, `local` or `substitute`."""
    usage_estimated: bool = False
    """`usage` is the gateway's estimate: the upstream reported none it could take (`usage_check.py`)."""

    def to_json(self) -> dict[str, Any]:
        """`zarniwoop llm ask --json` (DESIGN §6), exactly these keys."""
        return {
            "text": self.response.text,
            "toolCalls": [
                {"id": c.id, "name": c.name, "arguments": _arguments(c)} for c in self.response.tool_calls
            ],
            "providerType": self.provider_type,
            "instance": self.instance,
            "model": self.model,
            "credentialSource": self.credential_source,
            "usage": {"input": self.usage.input, "output": self.usage.output, "total": self.usage.total},
            "costUsd": self.cost_usd,
            "failover": [s.to_json() for s in self.failover],
        }


def _arguments(call: ToolCall) -> Any:
    try:
        return call.parsed_arguments()
    except Exception:  # keep what the model sent when it is not an object
        return call.arguments

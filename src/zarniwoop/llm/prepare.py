"""Before the first byte leaves: who the call runs for, under which budgets, on which model, with
which keys, in which order of candidates (the first of the call's three steps: prepare → attempt →
finish).

    purpose ─► model spec (preferences cascade; 95 % of a budget → the light model)  choice/model.py
            ─► alias resolver ─► (wire type, instance, model)                        choice/aliases.py
            ─► credential cascade ─► candidates: primary, fallbackModels, priority, local
                                                                   choice/key.py, choice/order.py

The budgets are checked once before the first byte: the first attempt's hold is reserved here
against each line's light-model threshold (`_hold_below_light`); only when that is refused are the
budgets read to decide between the light model, a block, and a call that is merely large.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..config.trust import guarded, set_by_operator
from ..contract.errors import FailoverError, QuotaExceededError, ZarniwoopError
from ..contract.query import SearchScope
from ..limits.failure_policy import IN_CALL_WAIT_CAP
from ..limits.token_budgets import Hold, LineStatus, QuotaLine, max_tokens_cap, quota_lines
from ..limits.windows import DEFAULT_WINDOW_SECONDS, WINDOW_KEY, rate_lines
from .call import FirstHold, LlmCall, ModelChoice, PreparedCall
from .choice.aliases import resolve
from .choice.key import CandidateBuilder
from .choice.model import SpecChoice, model_spec
from .choice.order import failover_policy, plan_candidates
from .failover import FailoverEngine
from .notify import WEBHOOK_KEY
from .settlement import DEFAULT_DRAIN_MS, DRAIN_KEY, release_first_hold
from .trace import PERSIST_KEY
from .traits import WarnOnce, warning_for

if TYPE_CHECKING:
    from ..config.settings import ScopedSettings
    from ..ledger import Switch
    from ..limits.windows import RateLine
    from ..tenancy.accounts import CallScope, FailoverPolicy
    from .adapters import ChatRequest
    from .call import CallParts
    from .catalog import ModelDoc
    from .choice.aliases import Resolution
    from .failover import Candidate

log = logging.getLogger("zarniwoop.llm")

LIGHT = "light"
TIMEOUT_KEY = "ai.call.timeoutMs"
MAX_WAIT_KEY = "ai.failover.maxWaitSeconds"
PURPOSE_PREFIX = "purpose:"


@dataclass(frozen=True, slots=True)
class Decision:
    """Who, under which budgets, on which model (`choose_model`)."""

    scope: CallScope
    scope_key: SearchScope
    settings: ScopedSettings
    lines: tuple[QuotaLine, ...]
    statuses: tuple[LineStatus, ...]
    purpose: str
    choice: SpecChoice
    resolution: Resolution


async def _refresh(parts: CallParts) -> None:
    """Reload the snapshots another process may have changed (a cheap check at most once a second)."""
    await parts.settings.refresh(max_age=1.0)
    await parts.credentials.refresh(max_age=1.0)
    await parts.directory.refresh(max_age=1.0)


async def _situate(parts: CallParts, call: LlmCall) -> tuple[CallScope, SearchScope, ScopedSettings]:
    await _refresh(parts)
    scope = parts.directory.scope(call.tenant, call.project, call.account, team=call.team)
    scope_key = SearchScope(call.tenant, call.project)
    return scope, scope_key, parts.settings.scoped(scope_key)


async def _statuses(parts: CallParts, tenant: str, lines: Sequence[QuotaLine]) -> tuple[LineStatus, ...]:
    limited = [line for line in lines if line.limit is not None]
    return tuple(await parts.ledger.status(tenant, limited)) if limited else ()


def _choose(
    call: LlmCall, scope: CallScope, settings: ScopedSettings, statuses: Sequence[LineStatus]
) -> tuple[str, SpecChoice, Resolution]:
    """The purpose (`light` at 95 % of a budget), the spec, its resolution."""
    spec = (call.model or "").strip()
    purpose = call.purpose
    if spec.startswith(PURPOSE_PREFIX):  # `purpose:light`: the preferences cascade picks the model
        purpose, spec = spec[len(PURPOSE_PREFIX) :].strip() or purpose, ""
    if _light_due(purpose, statuses):
        worst = max(statuses, key=lambda s: s.percent or 0)
        log.warning(
            "%s %s budget at %.1f%%: purpose %s switched to the light model",
            worst.line.label,
            worst.line.period,
            worst.percent or 0,
            purpose,
        )
        purpose = LIGHT
    choice = SpecChoice(spec, "call") if spec else model_spec(purpose, scope, call.overrides)
    return purpose, choice, resolve(choice.spec, settings)


def _light_due(purpose: str, statuses: Sequence[LineStatus]) -> bool:
    """A budget at its light-model threshold switches a call of another purpose to `light`."""
    return purpose != LIGHT and any((s.percent or 0) >= s.line.light_pct for s in statuses)


@dataclass(frozen=True, slots=True)
class _Plan:
    """The model and the candidates of a call, for a given reading of its budgets."""

    purpose: str
    choice: SpecChoice
    resolution: Resolution
    builder: CandidateBuilder
    candidates: list[Candidate]
    substitution: Switch | None


def _plan(
    parts: CallParts,
    call: LlmCall,
    scope: CallScope,
    settings: ScopedSettings,
    policy: FailoverPolicy,
    statuses: Sequence[LineStatus],
) -> _Plan:
    purpose, choice, resolution = _choose(call, scope, settings, statuses)
    builder = CandidateBuilder(scope, settings, parts.credentials, parts.environ)
    candidates, substitution = plan_candidates(
        builder, resolution, choice.spec, settings, policy, call.fallback_models
    )
    return _Plan(purpose, choice, resolution, builder, candidates, substitution)


@dataclass(frozen=True, slots=True)
class _Situation:
    """What a call's scope decides before its model: budgets, failover policy, the settings read
    per call. Depends only on the directory and the settings (`CallMemory`)."""

    scope: CallScope
    scope_key: SearchScope
    settings: ScopedSettings
    lines: tuple[QuotaLine, ...]
    below_light: tuple[QuotaLine, ...]
    """`lines`, each refusing at its light-model threshold (`_hold_below_light`'s probe)."""
    cap: int | None
    policy: FailoverPolicy
    rate_lines: tuple[RateLine, ...]
    rate_window: float
    max_wait: float
    timeout: float
    drain: float
    persist_trace: bool
    webhook_url: str | None
    webhook_guarded: bool


def _situation(scope: CallScope, scope_key: SearchScope, settings: ScopedSettings) -> _Situation:
    lines = tuple(quota_lines(scope))
    return _Situation(
        scope=scope,
        scope_key=scope_key,
        settings=settings,
        lines=lines,
        below_light=tuple(_below_light(line) for line in lines),
        cap=max_tokens_cap(scope),
        policy=failover_policy(scope),
        rate_lines=tuple(rate_lines(scope)),
        rate_window=settings.get_float(WINDOW_KEY, DEFAULT_WINDOW_SECONDS) or DEFAULT_WINDOW_SECONDS,
        max_wait=settings.get_float(MAX_WAIT_KEY, IN_CALL_WAIT_CAP) or IN_CALL_WAIT_CAP,
        timeout=settings.get_int(TIMEOUT_KEY, 120_000) / 1000,
        drain=max(0, settings.get_int(DRAIN_KEY, DEFAULT_DRAIN_MS)) / 1000,
        persist_trace=settings.get_bool(PERSIST_KEY, False),
        webhook_url=settings.get(WEBHOOK_KEY),
        webhook_guarded=guarded(settings, not set_by_operator(settings, WEBHOOK_KEY)),
    )


class CallMemory:
    """What preparing a call keeps for the next ones, per manager: the discipline warnings given
    (`WarnOnce`), and each scope's `_Situation` and each (scope, spec)'s `_Plan` — the credential
    cascade and the candidates, a tenth of a gateway call's instructions when built per call. Each holds
    while what it was built from is unchanged: the directory's, the settings' and the credentials'
    versions (bumped by every reload a refresh makes) and the operator variables it read; a plan
    made after a budget's reading (the light model's switch) is not kept."""

    MAX_ENTRIES = 1024
    """Entries kept at most in each memory (`_keep`)."""

    def __init__(self) -> None:
        self.warn_once = WarnOnce()
        self._situations: dict[tuple[object, ...], tuple[tuple[int, ...], _Situation]] = {}
        self._plans: dict[tuple[object, ...], tuple[tuple[int, ...], _Plan]] = {}

    async def situation(self, parts: CallParts, call: LlmCall) -> _Situation:
        await _refresh(parts)
        key = (call.tenant, call.project, call.account, call.team)
        directory, settings = parts.directory, parts.settings
        versions = (id(directory), directory.version, id(settings), settings.version)
        known = self._situations.get(key)
        if known is not None and known[0] == versions:
            return known[1]
        scope = parts.directory.scope(call.tenant, call.project, call.account, team=call.team)
        scope_key = SearchScope(call.tenant, call.project)
        found = _situation(scope, scope_key, parts.settings.scoped(scope_key))
        _keep(self._situations, key, (versions, found))
        return found

    def plan(self, parts: CallParts, call: LlmCall, situation: _Situation) -> _Plan:
        """The plan of a call before any budget was read (a refused one raises, kept nowhere)."""
        overrides = tuple(sorted(call.overrides.items()))
        key: tuple[object, ...] = (
            call.tenant,
            call.project,
            call.account,
            call.team,
            call.model,
            call.purpose,
        )
        key += (overrides, call.fallback_models)
        directory, settings, credentials = parts.directory, parts.settings, parts.credentials
        versions: tuple[int, ...] = (id(directory), directory.version, id(settings), settings.version)
        versions += (id(credentials), credentials.version)  # a store swapped on the manager is another
        known = self._plans.get(key)
        if known is not None and known[0] == versions:
            environ = parts.environ
            if all(environ.get(name) == value for name, value in known[1].builder.environ_read.items()):
                return known[1]
        found = _plan(parts, call, situation.scope, situation.settings, situation.policy, ())
        _keep(self._plans, key, (versions, found))
        return found


def _keep(memory: dict[tuple[object, ...], Any], key: tuple[object, ...], value: Any) -> None:
    """Scopes and specs are named by callers: a memory is emptied when it grows past its bound."""
    if len(memory) >= CallMemory.MAX_ENTRIES:
        memory.clear()
    memory[key] = value


async def decide(parts: CallParts, call: LlmCall) -> Decision:
    """Scope, budgets (read) and model: the purpose (`light` at 95 %), the spec, its resolution."""
    scope, scope_key, settings = await _situate(parts, call)
    lines = tuple(quota_lines(scope))
    statuses = await _statuses(parts, call.tenant, lines)
    purpose, choice, resolution = _choose(call, scope, settings, statuses)
    return Decision(scope, scope_key, settings, lines, statuses, purpose, choice, resolution)


async def choose_model(parts: CallParts, call: LlmCall) -> ModelChoice:
    """Which model a call would run on, and its catalog entry — without calling it."""
    decision = await decide(parts, call)
    catalog = await parts.catalog()
    resolution = decision.resolution
    doc = (
        catalog.lookup_or_default(
            resolution.instance,
            resolution.model,
            decision.scope_key,
            fallback_instance=resolution.protocol_type,
        )
        if catalog is not None
        else None
    )
    return ModelChoice(spec=decision.choice.spec, purpose=decision.purpose, resolution=resolution, doc=doc)


async def _hold_below_light(
    parts: CallParts, call: LlmCall, situation: _Situation, tokens: int, purpose: str
) -> FirstHold | None:
    """The first attempt's hold, reserved against each line's light-model threshold instead of its
    block: granted, no line is near the light model's switch nor exhausted, so the budgets need no
    read of their own — one storage round trip before the first byte, which also confirms the
    call's remembered token (`LlmCall.check_token`). Refused (or the store is out), None: the caller
    reads the budgets and decides as before, the hold left to the attempt."""
    lines = situation.lines
    if tokens < 1 or not any(line.limit is not None for line in lines):
        return None
    try:
        hold = await parts.ledger.reserve(
            call.tenant, lines if purpose == LIGHT else situation.below_light, tokens, token=call.check_token
        )
    except QuotaExceededError:
        return None
    # settled against the lines' real thresholds
    return FirstHold(Hold(hold.id, hold.tenant, lines, hold.buckets, hold.amount, hold.by_period))


def _below_light(line: QuotaLine) -> QuotaLine:
    """The line refusing at its light-model threshold."""
    return replace(line, block_pct=min(line.light_pct, line.block_pct)) if line.limit is not None else line


async def prepare_call(
    parts: CallParts, call: LlmCall, request: ChatRequest, memory: CallMemory, *, hold_first: bool = False
) -> PreparedCall:
    """Everything before the first byte leaves: scope, budgets, model, keys, candidates; with
    `hold_first` (a call about to run) also the first attempt's hold, whose reservation doubles as
    the budgets' check (`_hold_below_light`)."""
    situation = await memory.situation(parts, call)
    scope, settings, lines, policy = situation.scope, situation.settings, situation.lines, situation.policy
    cap = situation.cap
    if cap is not None and request.max_tokens > cap:
        request = replace(request, max_tokens=cap)
    estimate = request.estimated_input_tokens() + request.max_tokens
    plan: _Plan | None = None
    first = None
    if hold_first:
        try:
            plan = memory.plan(parts, call, situation)
        except ZarniwoopError:
            plan = None  # the light model may serve where this one cannot: the budgets decide below
        if plan is not None and plan.candidates:
            first = await _hold_below_light(parts, call, situation, estimate, plan.purpose)
    if first is None and call.check_token is not None:  # no reservation carried the token's check
        await parts.ledger.reserve(call.tenant, (), 0, token=call.check_token)
    statuses: tuple[LineStatus, ...] = ()
    if first is None:
        statuses = await _statuses(parts, call.tenant, lines)
        if plan is None or _light_due(plan.purpose, statuses):
            plan = _plan(parts, call, scope, settings, policy, statuses)
    assert plan is not None  # a hold is taken on a plan only
    purpose, choice, resolution = plan.purpose, plan.choice, plan.resolution
    candidates, substitution = plan.candidates, plan.substitution
    blocked = next((s for s in statuses if s.exhausted), None)
    if blocked is not None:
        candidates = [c for c in candidates if c.unlimited]  # 100 %: only the local free tier
    if not candidates and blocked is None:
        detail = "; ".join(dict.fromkeys(plan.builder.missing)) or "no provider entry or key"
        raise FailoverError(f"no usable LLM provider for {choice.spec!r} ({detail})", (), ())
    try:
        catalog = await parts.catalog()
        memory.warn_once(warning_for(resolution, catalog, situation.scope_key))
        return PreparedCall(
            call=call,
            scope_key=situation.scope_key,
            scope=scope,
            settings=settings,
            lines=lines,
            purpose=purpose,
            choice=choice,
            resolution=resolution,
            candidates=tuple(candidates),
            request=request,
            estimate=estimate,
            engine=FailoverEngine(policy, clock=parts.clock, max_wait=situation.max_wait),
            catalog=catalog,
            timeout=situation.timeout,
            drain=situation.drain,
            persist_trace=situation.persist_trace,
            webhook_url=situation.webhook_url,
            webhook_guarded=situation.webhook_guarded,
            rate_lines=situation.rate_lines,
            rate_window=situation.rate_window,
            substitution=substitution,
            blocked=blocked,
            first_hold=first,
        )
    except BaseException:
        await release_first_hold(parts, first)
        raise


def model_doc(prep: PreparedCall, candidate: Candidate) -> ModelDoc | None:
    """The catalog entry of the model a candidate serves (pricing, parser, traits)."""
    if prep.catalog is None:
        return None
    return prep.catalog.lookup_or_default(
        candidate.instance, candidate.model, prep.scope_key, fallback_instance=candidate.wire_type
    )

"""After the call: settle real usage at every level with the usage record (`settlement.charge`), tell
the observers (metrics, trace, threshold notices), and build the `LlmResult` (the last of the
call's three steps: prepare → attempt → finish).

A call that ended without the upstream's usage (cut, abandoned, failed midway) is charged what is
known (`finish_cut`); one that never reached a provider leaves a row with no tokens
(`record_failure`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ..ledger import UsageRecord
from .adapters.response import ChatResponse, TokenUsage
from .call import LlmResult
from .observers import CallEvent, notify_all
from .prepare import model_doc
from .settlement import CANCELLED, Admission, charge
from .trace import TraceBuffer
from .usage_check import CheckedUsage, check_usage, estimated_usage, usage_bound

if TYPE_CHECKING:
    from ..ledger import AttemptRecord, Switch
    from .call import CallParts, PreparedCall
    from .catalog import ModelDoc
    from .failover import Candidate, FailoverOutcome

log = logging.getLogger("zarniwoop.llm")


async def finish(
    parts: CallParts,
    prep: PreparedCall,
    candidate: Candidate,
    response: ChatResponse,
    *,
    admission: Admission | None,
    sink: TraceBuffer,
    doc: ModelDoc | None,
    attempts: tuple[AttemptRecord, ...],
    switches: tuple[Switch, ...],
    started: float,
    outcome: str = "ok",
    error: str | None = None,
    estimate: TokenUsage | None = None,
) -> LlmResult:
    """Settle real usage, tell the observers, and build the result. The usage is the upstream's when
    it passes `check_usage`, else the gateway's estimate of the answer (flagged on the record);
    `estimate`: a cut call's count of what is known to have been produced (flagged too)."""
    call = prep.call
    switches = with_substitution(prep, switches)
    if estimate is not None:  # cut before the upstream's usage came: what is known was produced
        checked = check_usage(None, estimate, bound=usage_bound(doc))
    else:
        checked = check_usage(
            response.usage, lambda: estimated_usage(prep.request, response), bound=usage_bound(doc)
        )
        if checked.estimated:
            _say_estimated(candidate, checked)
    usage = checked.usage
    cost = doc.cost_usd(usage.input, usage.output) if doc is not None else None
    duration = int((time.perf_counter() - started) * 1000)
    record = UsageRecord(
        tenant=call.tenant,
        account=call.account,
        project=call.project,
        team=prep.scope.team,
        provider=candidate.wire_type,
        instance=candidate.instance,
        model=candidate.model,
        purpose=prep.purpose,
        tokens_input=usage.input,
        tokens_output=usage.output,
        cost_usd=cost,
        credential_source=candidate.credential_source,
        duration_ms=duration,
        outcome=outcome,
        error=error,
        failover=switches,
        attempts=attempts,
        session_id=call.session_id,
        think_process_id=call.think_process_id,
        node_id=call.node_id,
        usage_estimated=checked.estimated,
    )
    statuses = await charge(parts, admission, usage.total, record)
    event = CallEvent(
        record=record,
        quota=tuple(statuses),
        webhook_url=prep.webhook_url,
        webhook_guarded=prep.webhook_guarded,
        trace=sink if prep.persist_trace else None,
        request=prep.request,
        response=response,
        settings=prep.settings,
    )
    await notify_all(parts.observers, event)
    return LlmResult(
        response=response,
        provider_type=candidate.wire_type,
        instance=candidate.instance,
        model=candidate.model,
        credential_source=candidate.credential_source,
        usage=usage,
        cost_usd=cost,
        purpose=prep.purpose,
        requested_purpose=call.purpose,
        spec=prep.choice.spec,
        failover=switches,
        attempts=attempts,
        usage_id=record.id,
        duration_ms=duration,
        origin=candidate.origin,
        usage_estimated=checked.estimated,
    )


async def finish_served(
    parts: CallParts,
    prep: PreparedCall,
    served: FailoverOutcome[Any],
    response: ChatResponse,
    *,
    admission: Admission | None,
    sink: TraceBuffer,
    doc: ModelDoc | None,
    started: float,
    abandoned: bool,
) -> LlmResult:
    """`finish` for the candidate the failover engine ended on, with its attempts and switches;
    `cancelled` when the caller abandoned the call before its answer."""
    return await finish(
        parts,
        prep,
        served.candidate,
        response,
        admission=admission,
        sink=sink,
        doc=doc,
        attempts=served.attempts,
        switches=served.switches,
        started=started,
        outcome=CANCELLED if abandoned else "ok",
    )


async def finish_cut(
    parts: CallParts,
    prep: PreparedCall,
    candidate: Candidate,
    admission: Admission | None,
    usage: TokenUsage,
    outcome: str,
    started: float,
    error: BaseException | None = None,
) -> None:
    """Settle and record a call that ended without the upstream's usage, charged `usage`."""
    message = getattr(error, "message", None) if error is not None else None
    await finish(
        parts,
        prep,
        candidate,
        ChatResponse(),
        admission=admission,
        sink=TraceBuffer(secrets_of(candidate)),
        doc=model_doc(prep, candidate),
        attempts=(),
        switches=(),
        started=started,
        outcome=outcome,
        error=message or ("the client went away" if outcome == CANCELLED else None),
        estimate=usage,
    )


async def record_failure(
    parts: CallParts,
    prep: PreparedCall,
    outcome: str,
    error: Exception,
    attempts: tuple[AttemptRecord, ...],
    switches: tuple[Switch, ...],
    started: float,
) -> None:
    """The row of a call no provider answered (`error`) or a budget refused (`blocked`): no tokens."""
    call = prep.call
    switches = with_substitution(prep, switches)
    first = prep.candidates[0] if prep.candidates else None
    record = UsageRecord(
        tenant=call.tenant,
        account=call.account,
        project=call.project,
        team=prep.scope.team,
        provider=first.wire_type if first else prep.resolution.protocol_type,
        instance=first.instance if first else prep.resolution.instance,
        model=first.model if first else prep.resolution.model,
        purpose=prep.purpose,
        tokens_input=0,
        tokens_output=0,
        cost_usd=None,
        credential_source=first.credential_source if first else "none",
        duration_ms=int((time.perf_counter() - started) * 1000),
        outcome=outcome,
        error=getattr(error, "message", str(error)),
        failover=switches,
        attempts=attempts,
        session_id=call.session_id,
        think_process_id=call.think_process_id,
        node_id=call.node_id,
    )
    await charge(parts, None, 0, record)
    await notify_all(
        parts.observers,
        CallEvent(record=record, request=prep.request, settings=prep.settings, blocked=prep.blocked),
    )


def _say_estimated(candidate: Candidate, checked: CheckedUsage) -> None:
    """Once per call: a refused report is a warning (a broken or hostile upstream), an absent one
    only worth knowing (some servers never report usage)."""
    usage = checked.usage
    if checked.reason is not None:
        log.warning(
            "%s/%s reported usage the gateway cannot take (%s): charged its estimate, %d in + %d out",
            candidate.instance,
            candidate.model,
            checked.reason,
            usage.input,
            usage.output,
        )
    else:
        log.info(
            "%s/%s reported no usage: charged the gateway's estimate, %d in + %d out",
            candidate.instance,
            candidate.model,
            usage.input,
            usage.output,
        )


def with_substitution(prep: PreparedCall, switches: tuple[Switch, ...]) -> tuple[Switch, ...]:
    """The switches of a call, led by the substitution `ai.substitute` made before it started."""
    return ((prep.substitution,) if prep.substitution is not None else ()) + switches


def secrets_of(candidate: Candidate) -> tuple[str, ...]:
    """What a trace of this candidate's exchange must never hold: its key."""
    return (candidate.api_key.reveal(),) if candidate.api_key else ()

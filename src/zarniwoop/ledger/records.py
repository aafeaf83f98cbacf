"""What the ledger records: one `CallRecord` per provider call of a search (`research_call_records`),
one `UsageRecord` per LLM call (`llm_usage_records`) with the `AttemptRecord`s and failover
`Switch`es inside it. Plain frozen data; `row()` gives the values in the order of the table's
columns (`ledger/tables.py`), `to_json()` the seed's camelCase fields.

    record = UsageRecord("acme", "mike", "review", None, "openai", "openai", "gpt-4o", "light",
                         1200, 345, 0.0042, "tenant", 812)
    record.tokens_total   # 1545; cost_usd None would mean "unpriced", never a guess
"""

from __future__ import annotations

import json
import operator
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..contract.camel_json import camel_json
from ..contract.replacing import slot_init
from .tables import LLM_USAGE, RESEARCH_CALLS


@slot_init
@dataclass(frozen=True, slots=True)
class CallRecord:
    id: str
    tenant: str
    project: str
    instance_id: str
    protocol: str
    modality: str
    tier: str
    query_hash: str
    hit_count: int
    ok: bool
    outcome: str
    error_message: str | None
    started_at: float
    duration_ms: int
    profile: str | None = None
    """The agent profile that routed the call (None: the global order)."""
    trace_id: str | None = None
    """The OpenTelemetry trace the call ran in (None: tracing off), as the result's `traceId`."""

    def to_json(self) -> dict[str, Any]:
        """The seed's field names, as spooled."""
        return {
            "id": self.id,
            "tenantId": self.tenant,
            "projectId": self.project,
            "instanceId": self.instance_id,
            "protocol": self.protocol,
            "modality": self.modality,
            "tier": self.tier,
            "queryHash": self.query_hash,
            "hitCount": self.hit_count,
            "ok": self.ok,
            "outcome": self.outcome,
            "errorMessage": self.error_message,
            "startedAt": self.started_at,
            "durationMs": self.duration_ms,
            "profile": self.profile,
            "traceId": self.trace_id,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CallRecord:
        return cls(
            id=str(data["id"]),
            tenant=str(data["tenantId"]),
            project=str(data["projectId"]),
            instance_id=str(data["instanceId"]),
            protocol=str(data["protocol"]),
            modality=str(data["modality"]),
            tier=str(data["tier"]),
            query_hash=str(data["queryHash"]),
            hit_count=int(data["hitCount"]),
            ok=bool(data["ok"]),
            outcome=str(data["outcome"]),
            error_message=data.get("errorMessage"),
            started_at=float(data["startedAt"]),
            duration_ms=int(data["durationMs"]),
            profile=data.get("profile"),
            trace_id=data.get("traceId"),
        )

    def row(self) -> tuple[Any, ...]:
        """The values of `RESEARCH_CALLS.columns` (named as the fields are), in that order."""
        return _CALL_ROW(self)


_CALL_ROW = operator.attrgetter(*RESEARCH_CALLS.columns)
"""A record's row in one C call (every audited call is one row: issue 42)."""


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    instance: str
    model: str
    outcome: str
    """`ok`, `error`, `blocked` (a budget refused it)."""
    error: str | None = None
    status: int | None = None
    duration_ms: int = 0
    waited_ms: int = 0
    """How long the engine waited before this attempt (Retry-After or backoff)."""

    def to_json(self) -> dict[str, object]:
        return camel_json(self)


@dataclass(frozen=True, slots=True)
class Switch:
    from_instance: str
    to_instance: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"from": self.from_instance, "to": self.to_instance, "reason": self.reason}


def new_usage_id() -> str:
    return "usage_" + secrets.token_hex(8)


@dataclass(frozen=True, slots=True)
class UsageRecord:
    tenant: str
    account: str | None
    project: str | None
    team: str | None
    provider: str
    instance: str
    model: str
    purpose: str
    tokens_input: int
    tokens_output: int
    cost_usd: float | None
    credential_source: str
    duration_ms: int
    outcome: str = "ok"
    """`ok`, `error` (every provider failed, or one failed midway: its tokens are charged), `blocked`
    (a budget refused the call) or `cancelled` (the client went away or a deadline cut it; charged
    what the upstream produced, `llm/settlement.py`)."""
    error: str | None = None
    failover: tuple[Switch, ...] = ()
    attempts: tuple[AttemptRecord, ...] = ()
    session_id: str | None = None
    think_process_id: str | None = None
    node_id: str | None = None
    usage_estimated: bool = False
    """The tokens are the gateway's estimate, not the upstream's report: none came, the one that came
    was refused (`llm/usage_check.py`), or the call was cut before it."""
    id: str = field(default_factory=new_usage_id)
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))

    @property
    def tokens_total(self) -> int:
        return self.tokens_input + self.tokens_output

    def to_json(self) -> dict[str, Any]:
        """The seed's fields, camelCase (DESIGN §3); `costUsd: null` means unpriced."""
        return {
            "id": self.id,
            "accountId": self.account,
            "projectId": self.project,
            "teamId": self.team,
            "tenantId": self.tenant,
            "sessionId": self.session_id,
            "thinkProcessId": self.think_process_id,
            "nodeId": self.node_id,
            "provider": self.provider,
            "instance": self.instance,
            "model": self.model,
            "purpose": self.purpose,
            "tokensInput": self.tokens_input,
            "tokensOutput": self.tokens_output,
            "tokensTotal": self.tokens_total,
            "costUsd": self.cost_usd,
            "priced": self.cost_usd is not None,
            "credentialSource": self.credential_source,
            "durationMs": self.duration_ms,
            "outcome": self.outcome,
            "error": self.error,
            "usageEstimated": self.usage_estimated,
            "failover": [s.to_json() for s in self.failover],
            "attempts": [a.to_json() for a in self.attempts],
            "timestamp": self.created_at,
        }

    def row(self) -> tuple[Any, ...]:
        """The values of `LLM_USAGE.columns`, in that order."""
        return (
            self.id,
            self.tenant,
            self.account,
            self.project,
            self.team,
            self.session_id,
            self.think_process_id,
            self.node_id,
            self.provider,
            self.instance,
            self.model,
            self.purpose,
            self.tokens_input,
            self.tokens_output,
            self.tokens_total,
            self.cost_usd,
            self.credential_source,
            self.duration_ms,
            self.outcome,
            self.error,
            json.dumps([s.to_json() for s in self.failover]),
            json.dumps([a.to_json() for a in self.attempts]),
            self.created_at,
            self.usage_estimated,
        )

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> UsageRecord:
        """A record read back from the values of `LLM_USAGE.columns`."""
        values = dict(zip(LLM_USAGE.columns, row, strict=True))
        del values["tokens_total"]  # not a field: the sum of the two, kept for SQL's sake
        values.update(
            tokens_input=int(values["tokens_input"]),
            tokens_output=int(values["tokens_output"]),
            cost_usd=None if values["cost_usd"] is None else float(values["cost_usd"]),
            duration_ms=int(values["duration_ms"]),
            usage_estimated=bool(values["usage_estimated"]),
            failover=tuple(
                Switch(from_instance=s["from"], to_instance=s["to"], reason=s["reason"])
                for s in json.loads(values["failover"])
            ),
            attempts=tuple(_attempt_from_json(a) for a in json.loads(values["attempts"])),
        )
        return cls(**values)


def _attempt_from_json(a: dict[str, Any]) -> AttemptRecord:
    return AttemptRecord(
        instance=a["instance"],
        model=a["model"],
        outcome=a["outcome"],
        error=a.get("error"),
        status=a.get("status"),
        duration_ms=a.get("durationMs", 0),
        waited_ms=a.get("waitedMs", 0),
    )

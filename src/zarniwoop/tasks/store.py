"""The task table: a tool call that outlives its connection, kept in the database (issue 45).

    store = TaskStore(db, box, clock)
    task = await store.create(caller, "research_investigate", request, ttl=86400, owner=me, lease=30)
    await store.get(task.id, caller)      # None for an unknown id, an expired one, or another caller's
    await store.cancel(task.id, caller)   # the task, now `cancelled` (a finished one stays as it was)

A task belongs to the tenant, project and token (or OAuth grant) that made it: every read names
that `TaskCaller`, and any other gets "not found" — an id says nothing to another scope. Ids come
from `secrets.token_hex` (unguessable, 192 bits; hex, so `zarniwoop tasks get ID` never takes one
for an option). The request (the question), the progress, the result,
the failure reason and each finished step's output are sealed with the `SecretBox`: the database
never holds a query in clear (DESIGN §10).

Ownership is a lease: the process running a task (`owner`) renews `lease_until`; once it lapses,
`claim_orphans` lets another process take the task over (`runs` counts the starts) — or, past
`MAX_RUNS`, end it `failed` with the reason — so no task stays `working` after its process died.
Every write of a run names its owner, so a process that lost its task (taken over while it hung)
can no longer write into it.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..contract.clock import iso_utc

if TYPE_CHECKING:
    from ..contract.clock import Clock
    from ..storage.crypto import SecretBox
    from ..storage.db import Database

TaskState = Literal["working", "completed", "failed", "cancelled"]
TABLE = "research_tasks"
STEPS_TABLE = "research_task_steps"
MAX_RUNS = 3
"""A task whose process died this many times ends `failed` rather than being started again."""
LIST_LIMIT = 100

_COLUMNS = (
    "id, tenant, project, principal, tool, state, progress, result, error, owner, lease_until, runs, "
    "created_at, updated_at, expires_at"
)


@dataclass(frozen=True, slots=True)
class TaskCaller:
    """Who a task belongs to: its scope and the token or grant that made it ('' for a local CLI)."""

    tenant: str
    project: str
    principal: str = ""


@dataclass(frozen=True, slots=True)
class TaskRequest:
    """What to run again on a takeover: the tool's arguments and the call's switches."""

    arguments: Mapping[str, Any]
    cache: bool = True
    profile: str | None = None
    """The profile the call routed through (the connection's choice, already narrowed)."""
    bound_profile: str | None = None
    admin: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "arguments": dict(self.arguments),
            "cache": self.cache,
            "profile": self.profile,
            "boundProfile": self.bound_profile,
            "admin": self.admin,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskRequest:
        return cls(
            data["arguments"], data["cache"], data.get("profile"), data.get("boundProfile"), data["admin"]
        )


@dataclass(frozen=True, slots=True)
class TaskRecord:
    id: str
    caller: TaskCaller
    tool: str
    state: TaskState
    progress: Mapping[str, Any] | None
    result: Mapping[str, Any] | None
    error: str | None
    owner: str | None
    lease_until: float
    runs: int
    created_at: float
    updated_at: float
    expires_at: float

    @property
    def done(self) -> bool:
        return self.state != "working"

    def to_json(self, *, result: bool = True) -> dict[str, Any]:
        """The `Task` of `GET /v1/tasks/{id}`: `{taskId, tool, status, progress?, result?, error?,
        createdAt, updatedAt, expiresAt}`; `result` (the JSON the synchronous call answers) only
        once `completed`, and when asked."""
        out: dict[str, Any] = {"taskId": self.id, "tool": self.tool, "status": self.state}
        if self.progress is not None:
            out["progress"] = dict(self.progress)
        if result and self.result is not None:
            out["result"] = dict(self.result["full"])
        if self.error is not None:
            out["error"] = self.error
        out.update(
            createdAt=iso_utc(self.created_at),
            updatedAt=iso_utc(self.updated_at),
            expiresAt=iso_utc(self.expires_at),
        )
        return out


class TaskStore:
    def __init__(self, db: Database, box: SecretBox, clock: Clock) -> None:
        self.db = db
        self.box = box
        self.clock = clock

    # -- the caller's view ------------------------------------------------------------------------

    async def create(
        self,
        caller: TaskCaller,
        tool: str,
        request: TaskRequest,
        *,
        ttl: float,
        owner: str | None,
        lease: float,
    ) -> TaskRecord:
        """A new `working` task; `owner` None leaves it to whichever process claims it first."""
        task_id = secrets.token_hex(24)  # never led by "-", which a command line reads as an option
        now = self.clock.now()
        lease_until = now + lease if owner is not None else 0.0
        await self.db.execute(
            f"INSERT INTO {TABLE} (id, tenant, project, principal, tool, request, state, owner, lease_until, "
            "runs, created_at, updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, 'working', ?, ?, ?, ?, ?, ?)",
            (
                task_id,
                caller.tenant,
                caller.project,
                caller.principal,
                tool,
                self._seal(task_id, "request", request.to_json()),
                owner,
                float(lease_until),
                1 if owner is not None else 0,
                float(now),
                float(now),
                float(now + ttl),
            ),
        )
        record = await self.read(task_id)
        assert record is not None
        return record

    async def get(self, task_id: str, caller: TaskCaller) -> TaskRecord | None:
        """The caller's task, or None: unknown, expired, or made by another scope or token."""
        record = await self.read(task_id)
        if record is None or record.caller != caller or record.expires_at <= self.clock.now():
            return None
        return record

    async def list_for(self, caller: TaskCaller, *, limit: int = LIST_LIMIT) -> list[TaskRecord]:
        """The caller's unexpired tasks, newest first."""
        rows = await self.db.fetchall(
            f"SELECT {_COLUMNS} FROM {TABLE} WHERE tenant = ? AND project = ? AND principal = ? "
            "AND expires_at > ? ORDER BY created_at DESC LIMIT ?",
            (caller.tenant, caller.project, caller.principal, float(self.clock.now()), limit),
        )
        return [self._record(row) for row in rows]

    async def cancel(self, task_id: str, caller: TaskCaller) -> TaskRecord | None:
        """Mark the caller's `working` task `cancelled` (its owner stops at its next step or lease
        renewal); a finished task stays as it was. None: not the caller's (not found)."""
        if await self.get(task_id, caller) is None:
            return None
        await self.db.execute(
            f"UPDATE {TABLE} SET state = 'cancelled', updated_at = ? WHERE id = ? AND state = 'working'",
            (float(self.clock.now()), task_id),
        )
        return await self.get(task_id, caller)

    # -- the owner's side -------------------------------------------------------------------------

    async def request_of(self, task_id: str) -> TaskRequest:
        row = await self.db.fetchone(f"SELECT request FROM {TABLE} WHERE id = ?", (task_id,))
        if row is None:
            raise LookupError(task_id)
        return TaskRequest.from_json(self._open(task_id, "request", row[0]))

    async def renew(self, task_id: str, owner: str, lease: float) -> bool:
        """Extend the lease; False when the task is no longer this owner's to run (cancelled,
        ended, or taken over by another process)."""
        now = self.clock.now()
        renewed = await self.db.execute(
            f"UPDATE {TABLE} SET lease_until = ? WHERE id = ? AND owner = ? AND state = 'working'",
            (float(now + lease), task_id, owner),
        )
        return renewed > 0

    async def record_progress(self, task_id: str, owner: str, step: Mapping[str, Any]) -> bool:
        updated = await self.db.execute(
            f"UPDATE {TABLE} SET progress = ?, updated_at = ? WHERE id = ? AND owner = ? AND state = 'working'",
            (self._seal(task_id, "progress", step), float(self.clock.now()), task_id, owner),
        )
        return updated > 0

    async def finish(
        self,
        task_id: str,
        owner: str,
        state: TaskState,
        *,
        ttl: float,
        result: Mapping[str, Any] | None = None,
        error: str | None = None,
    ) -> bool:
        """End the owner's run: the result (or the reason) is kept `ttl` seconds from now. False:
        the task was cancelled or taken over meanwhile, and stays as the other party left it."""
        now = self.clock.now()
        ended = await self.db.execute(
            f"UPDATE {TABLE} SET state = ?, result = ?, error = ?, lease_until = 0, updated_at = ?, "
            "expires_at = ? WHERE id = ? AND owner = ? AND state = 'working'",
            (
                state,
                self._seal(task_id, "result", result) if result is not None else None,
                self._seal(task_id, "error", error) if error is not None else None,
                float(now),
                float(now + ttl),
                task_id,
                owner,
            ),
        )
        return ended > 0

    async def claim_orphans(
        self, owner: str, lease: float, *, limit: int = 10, only: str | None = None
    ) -> list[str]:
        """Take over `working` tasks whose lease lapsed (their process died or hangs), or `only`
        that one: the ids this process now runs. One that already ran `MAX_RUNS` times ends
        `failed`, saying why."""
        now = self.clock.now()
        which, params = ("AND id = ? ", [only]) if only is not None else ("", [])
        rows = await self.db.fetchall(
            f"SELECT id, owner, runs FROM {TABLE} WHERE state = 'working' AND lease_until < ? "
            f"AND expires_at > ? {which}ORDER BY lease_until LIMIT ?",
            (float(now), float(now), *params, limit),
        )
        claimed: list[str] = []
        for task_id, previous, runs in rows:
            if runs >= MAX_RUNS:
                reason = f"the process running it stopped {runs} times; not started again"
                await self.db.execute(
                    f"UPDATE {TABLE} SET state = 'failed', error = ?, updated_at = ? "
                    "WHERE id = ? AND state = 'working' AND lease_until < ?",
                    (self._seal(task_id, "error", reason), float(now), task_id, float(now)),
                )
                continue
            # compare-and-set on the previous owner and its lapsed lease: one claimant wins
            taken = await self.db.execute(
                f"UPDATE {TABLE} SET owner = ?, lease_until = ?, runs = runs + 1 WHERE id = ? "
                "AND state = 'working' AND lease_until < ? AND COALESCE(owner, '') = ?",
                (owner, float(now + lease), task_id, float(now), previous or ""),
            )
            if taken > 0:
                claimed.append(task_id)
        return claimed

    async def release(self, owner: str) -> int:
        """Lapse the leases of every task `owner` still runs (it is stopping): another process
        takes them over at its next sweep. How many were released."""
        return await self.db.execute(
            f"UPDATE {TABLE} SET lease_until = 0 WHERE owner = ? AND state = 'working'", (owner,)
        )

    async def state_of(self, task_id: str) -> TaskState | None:
        row = await self.db.fetchone(f"SELECT state FROM {TABLE} WHERE id = ?", (task_id,))
        return row[0] if row is not None else None

    # -- finished steps (`contract.checkpoint.Checkpoint`) ----------------------------------------

    async def recall(self, task_id: str, step: str) -> Mapping[str, Any] | None:
        row = await self.db.fetchone(
            f"SELECT output FROM {STEPS_TABLE} WHERE task_id = ? AND step = ?", (task_id, step)
        )
        return self._open(task_id, f"step:{step}", row[0]) if row is not None else None

    async def keep(self, task_id: str, step: str, output: Mapping[str, Any]) -> None:
        await self.db.execute(
            f"INSERT INTO {STEPS_TABLE} (task_id, step, output) VALUES (?, ?, ?) "
            "ON CONFLICT (task_id, step) DO NOTHING",
            (task_id, step, self._seal(task_id, f"step:{step}", output)),
        )

    async def steps(self, task_id: str) -> int:
        row = await self.db.fetchone(f"SELECT COUNT(*) FROM {STEPS_TABLE} WHERE task_id = ?", (task_id,))
        return int(row[0]) if row is not None else 0

    # -- rows -------------------------------------------------------------------------------------

    async def read(self, task_id: str) -> TaskRecord | None:
        """Any task by id, whoever made it: for the process running it, never for a caller."""
        if not isinstance(task_id, str) or not task_id or len(task_id) > 64:
            return None
        row = await self.db.fetchone(f"SELECT {_COLUMNS} FROM {TABLE} WHERE id = ?", (task_id,))
        return self._record(row) if row is not None else None

    def _record(self, row: tuple[Any, ...]) -> TaskRecord:
        (task_id, tenant, project, principal, tool, state, progress, result, error, owner) = row[:10]
        lease_until, runs, created_at, updated_at, expires_at = row[10:]
        return TaskRecord(
            id=task_id,
            caller=TaskCaller(tenant, project, principal),
            tool=tool,
            state=state,
            progress=self._open(task_id, "progress", progress) if progress else None,
            result=self._open(task_id, "result", result) if result else None,
            error=self._open(task_id, "error", error) if error else None,
            owner=owner,
            lease_until=float(lease_until),
            runs=int(runs),
            created_at=float(created_at),
            updated_at=float(updated_at),
            expires_at=float(expires_at),
        )

    def _seal(self, task_id: str, field: str, value: Any) -> str:
        return self.box.seal(json.dumps(value, separators=(",", ":")), aad=_aad(task_id, field))

    def _open(self, task_id: str, field: str, sealed: str) -> Any:
        return json.loads(self.box.open(sealed, aad=_aad(task_id, field)))


def _aad(task_id: str, field: str) -> bytes:
    """Binds a sealed value to its task and field: copied into another row, it does not open."""
    return f"task:{task_id}:{field}".encode()


__all__ = [
    "MAX_RUNS",
    "STEPS_TABLE",
    "TABLE",
    "TaskCaller",
    "TaskRecord",
    "TaskRequest",
    "TaskState",
    "TaskStore",
]

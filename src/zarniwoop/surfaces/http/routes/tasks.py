"""`/v1/tasks`: tool calls that outlive their request (issue 45, docs/tasks.md).

POST   /v1/research/investigate   with `Prefer: respond-async` (RFC 7240) → 202, `Location: /v1/tasks/{id}`
GET    /v1/tasks                  the caller's tasks, newest first (no results: poll each for it)
GET    /v1/tasks/{id}             `{taskId, tool, status, progress?, result?, error?, createdAt, …}`
DELETE /v1/tasks/{id}             cancel → the task, `cancelled` (a finished one stays as it was)

A task belongs to the tenant, project and token (or OAuth grant) that started it; any other caller
gets 404 for its id, as for an id that never existed. Any worker or replica answers: the task
lives in the database (`tasks/store.py`). `result` is the JSON the synchronous route answers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ....tasks.store import TaskCaller, TaskRecord
from ..deps import Caller, CallerInfo, Ctx
from ..errors import ERROR_RESPONSES
from ..state import AppState

router = APIRouter(prefix="/v1/tasks", tags=["tasks"], responses=ERROR_RESPONSES)
RESPOND_ASYNC = "respond-async"
TASK_ID = Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$", description="The task's id.")


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True)


class TaskProgress(_Wire):
    """The last step a task's run reported (as the `progress` events of the SSE stream)."""

    step: str
    message: str
    done: int
    total: int | None = None
    detail: dict[str, Any] | None = None


class Task(_Wire):
    """A tool call running (or run) apart from the request that started it."""

    task_id: str = Field(description="Unguessable; bound to the tenant, project and token that made it.")
    tool: str = Field(description="The tool it runs, e.g. research_investigate.")
    status: Literal["working", "completed", "failed", "cancelled"]
    progress: TaskProgress | None = None
    result: dict[str, Any] | None = Field(
        None, description="Once completed: the JSON the synchronous route answers (a RankedHitSet)."
    )
    error: str | None = Field(None, description="Once failed: why.")
    created_at: str
    updated_at: str
    expires_at: str = Field(
        description="After this the task and its result are deleted (research.tasks.ttlSeconds)."
    )


class TaskList(_Wire):
    tasks: list[Task]


def task_caller(caller: CallerInfo) -> TaskCaller:
    """The owner a task is bound to: the request's scope and the token (or grant) that sent it."""
    return TaskCaller(caller.scope.tenant, caller.scope.project, caller.principal.token_id or "")


def wants_async(request: Request) -> bool:
    """`Prefer: respond-async` (RFC 7240 §4.1), among other preferences of the header."""
    for header in request.headers.getlist("prefer"):
        for preference in header.split(","):
            if preference.split(";", 1)[0].strip().lower() == RESPOND_ASYNC:
                return True
    return False


def accepted(record: TaskRecord) -> JSONResponse:
    """202 with the task and where to poll it."""
    return JSONResponse(
        record.to_json(),
        status_code=202,
        headers={"Location": f"/v1/tasks/{record.id}", "Preference-Applied": RESPOND_ASYNC},
    )


def runner_of(state: AppState) -> Any:
    if state.tasks is None:  # only while the app starts or stops
        raise HTTPException(503, "tasks are not available yet")
    return state.tasks


def _not_found() -> HTTPException:
    return HTTPException(404, "no such task (unknown, expired, or not this caller's)")


@router.get(
    "", operation_id="tasks_list", summary="The caller's tasks, newest first", response_model=TaskList
)
async def list_tasks(ctx: Ctx, caller: Caller) -> JSONResponse:
    records = await runner_of(ctx).store.list_for(task_caller(caller))
    return JSONResponse({"tasks": [r.to_json(result=False) for r in records]})


@router.get(
    "/{task_id}",
    operation_id="tasks_get",
    summary="A task's status, progress and result",
    response_model=Task,
)
async def get_task(task_id: Annotated[str, TASK_ID], ctx: Ctx, caller: Caller) -> JSONResponse:
    record = await runner_of(ctx).store.get(task_id, task_caller(caller))
    if record is None:
        raise _not_found()
    return JSONResponse(record.to_json())


@router.delete("/{task_id}", operation_id="tasks_cancel", summary="Cancel a task", response_model=Task)
async def cancel_task(task_id: Annotated[str, TASK_ID], ctx: Ctx, caller: Caller) -> JSONResponse:
    record = await runner_of(ctx).cancel(task_id, task_caller(caller))
    if record is None:
        raise _not_found()
    return JSONResponse(record.to_json())


__all__ = ["RESPOND_ASYNC", "Task", "TaskList", "accepted", "router", "task_caller", "wants_async"]

"""MCP tasks (issue 45): `research_investigate` and `research_rich` answer with a task handle when
the client opts in, and `tasks/*` read the task from the database, so any worker or replica answers.

Two wires, one task table (`tasks/`):

- **2026-07-28**, the `io.modelcontextprotocol/tasks` extension (SEP-2663), through the SDK's
  `Extension` interface: a `tools/call` whose per-request capabilities name the extension gets a
  `CreateTaskResult` (`resultType: "task"`, the task's fields inline); `tasks/get` answers the task
  with `result` (the `CallToolResult`) once completed or `error` once failed; `tasks/cancel` and
  `tasks/update` acknowledge with an empty result. A request to `tasks/*` that does not declare the
  extension is `-32021`.
- **2025-11-25**, the experimental task augmentation: a `tools/call` with `params.task` gets
  `{"task": {taskId, status, …, ttl, pollInterval}}`; `tasks/get` and `tasks/cancel` answer the task,
  `tasks/result` waits for the end and answers the `CallToolResult` (a JSON-RPC error for a failed or
  cancelled task), `tasks/list` the caller's tasks. The SDK serves this revision's `tools/call`
  through a surface that only knows `CallToolResult`, so the handle is answered by a server
  middleware (`legacy_task_middleware`), which also adds `capabilities.tasks` to `initialize` and
  `execution.taskSupport: "optional"` to the long tools in `tools/list`.

An unknown id, an expired one and another caller's are alike: `-32602` "Task not found". The
caller is the tenant, project and token (or grant) of the request, as for `/v1/tasks`: a task
started over MCP is readable at `/v1/tasks/{id}` with the same token, and the other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcp import MCPError
from mcp.server.extension import Extension, MethodBinding
from mcp_types import INVALID_PARAMS, RequestParams

from ..contract.errors import InvalidRequestError
from ..dispatch.profiles import ProfileChoice
from ..tasks.store import TaskCaller, TaskRecord

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp_types import CallToolRequestParams

    from ..tasks.runner import TaskRunner
    from ..tenancy.tokens import Principal

EXTENSION_ID = "io.modelcontextprotocol/tasks"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
RELATED_TASK = "io.modelcontextprotocol/related-task"
LEGACY = "2025-11-25"
MODERN = frozenset({"2026-07-28"})
TASK_TOOLS = frozenset({"research_investigate", "research_rich"})
"""The tools that run long enough to be worth a task."""
POLL_INTERVAL_MS = 1000
MISSING_CAPABILITY = -32021
INTERNAL_ERROR = -32603

RequestPrincipal = Callable[[Any], "tuple[Principal, str | None]"]
"""The principal and `/mcp?profile=` of a request (the HTTP surface's ASGI scope)."""


class TaskIdParams(RequestParams):
    task_id: str


class UpdateParams(TaskIdParams):
    input_responses: dict[str, Any] | None = None


class ListParams(RequestParams):
    cursor: str | None = None


class TasksExtension(Extension):
    identifier = EXTENSION_ID

    def __init__(self, runner: TaskRunner, principal_of: RequestPrincipal) -> None:
        self.runner = runner
        self.principal_of = principal_of

    def methods(self) -> list[MethodBinding]:
        legacy = frozenset({LEGACY})
        return [
            MethodBinding("tasks/get", TaskIdParams, self._get),
            MethodBinding("tasks/cancel", TaskIdParams, self._cancel),
            MethodBinding("tasks/update", UpdateParams, self._update, protocol_versions=MODERN),
            MethodBinding("tasks/result", TaskIdParams, self._result, protocol_versions=legacy),
            MethodBinding("tasks/list", ListParams, self._list, protocol_versions=legacy),
        ]

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.protocol_version in MODERN and params.name in TASK_TOOLS and _declares_extension(ctx):
            record = await self.start(ctx, params.name, params.arguments)
            return {"resultType": "task", **modern_task(record)}
        return await call_next(ctx)

    async def start(self, ctx: ServerRequestContext[Any, Any], tool: str, arguments: Any) -> TaskRecord:
        """Record the call as a task, running in this process; the handle only once it is durable."""
        from ..tools.registry import parse_arguments, tool_spec
        from .mcp import invalid_params

        principal, profile = self.principal_of(ctx.request)
        spec = tool_spec(tool)
        try:
            args = parse_arguments(spec, arguments)
            return await self.runner.start(
                spec,
                args,
                _caller(principal),
                admin=principal.admin,
                profile=ProfileChoice(profile, principal.profile),
            )
        except InvalidRequestError as exc:
            raise invalid_params(exc) from None

    async def _record(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> TaskRecord:
        if ctx.protocol_version in MODERN and not _declares_extension(ctx):
            raise MCPError(
                code=MISSING_CAPABILITY,
                message="Missing required client capability",
                data={"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
            )
        record = await self.runner.store.get(task_id, _caller(self.principal_of(ctx.request)[0]))
        if record is None:
            raise MCPError(code=INVALID_PARAMS, message="Failed to retrieve task: Task not found")
        return record

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        record = await self._record(ctx, params.task_id)
        return modern_task(record, detailed=True) if ctx.protocol_version in MODERN else legacy_task(record)

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        record = await self._record(ctx, params.task_id)
        cancelled = await self.runner.cancel(record.id, record.caller) or record
        return {} if ctx.protocol_version in MODERN else legacy_task(cancelled)

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: UpdateParams) -> dict[str, Any]:
        await self._record(ctx, params.task_id)  # no task of ours ever asks for input: nothing to apply
        return {}

    async def _result(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        record = await self._record(ctx, params.task_id)
        done = await self.runner.wait(record.id, record.caller) or record
        related = {"_meta": {RELATED_TASK: {"taskId": done.id}}}
        if done.state == "completed" and done.result is not None:
            return {**call_tool_result(done.result), **related}
        message = done.error if done.state == "failed" else "Task cancelled"
        raise MCPError(code=INTERNAL_ERROR, message=message or done.state, data=related["_meta"])

    async def _list(self, ctx: ServerRequestContext[Any, Any], params: ListParams) -> dict[str, Any]:
        records = await self.runner.store.list_for(_caller(self.principal_of(ctx.request)[0]))
        return {"tasks": [legacy_task(r) for r in records]}


def legacy_task_middleware(extension: TasksExtension) -> Callable[..., Any]:
    """The 2025-11-25 task augmentation, where the SDK's `tools/call` surface cannot carry it."""

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        if (
            ctx.method == "tools/call"
            and ctx.protocol_version == LEGACY
            and params.get("task") is not None
            and params.get("name") in TASK_TOOLS
        ):
            record = await extension.start(ctx, params["name"], params.get("arguments"))
            # `content: []`: the SDK's own handshake client validates every `tools/call` answer as
            # a CallToolResult (its task types are types-only); an empty list keeps it reading this
            return {"task": legacy_task(record), "content": []}
        result = await call_next(ctx)
        if isinstance(result, dict):
            _advertise_legacy(ctx.method, result)
        return result

    return middleware


def _advertise_legacy(method: str, result: dict[str, Any]) -> None:
    if method == "initialize" and result.get("protocolVersion") == LEGACY:
        capabilities = result.setdefault("capabilities", {})
        capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    elif method == "tools/list" and result.get("resultType") is None:
        for tool in result.get("tools", ()):
            if tool.get("name") in TASK_TOOLS:
                tool["execution"] = {"taskSupport": "optional"}


def _declares_extension(ctx: ServerRequestContext[Any, Any]) -> bool:
    params = ctx.params if isinstance(ctx.params, Mapping) else {}
    meta = params.get("_meta") or {}
    extensions = (meta.get(CLIENT_CAPABILITIES) or {}).get("extensions") or {}
    return isinstance(extensions, Mapping) and EXTENSION_ID in extensions


def _caller(principal: Principal) -> TaskCaller:
    scope = principal.scope_for()
    return TaskCaller(scope.tenant, scope.project, principal.token_id or "")


def call_tool_result(answer: Mapping[str, Any]) -> dict[str, Any]:
    """The stored answer as the `CallToolResult` a direct call returns."""
    return {
        "content": [{"type": "text", "text": answer["text"]}],
        "structuredContent": answer["structured"],
        "isError": answer["isError"],
    }


def _common(record: TaskRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"taskId": record.id, "status": record.state}
    message = record.error or (record.progress or {}).get("message")
    if message:
        out["statusMessage"] = message
    wire = record.to_json(result=False)
    out.update(createdAt=wire["createdAt"], lastUpdatedAt=wire["updatedAt"])
    return out


def _ttl_ms(record: TaskRecord) -> int:
    return round((record.expires_at - record.created_at) * 1000)


def modern_task(record: TaskRecord, *, detailed: bool = False) -> dict[str, Any]:
    """The 2026-07-28 `Task` (a `DetailedTask` for `tasks/get`: the result or error inline)."""
    out = {**_common(record), "ttlMs": _ttl_ms(record), "pollIntervalMs": POLL_INTERVAL_MS}
    if detailed and record.state == "completed" and record.result is not None:
        out["result"] = call_tool_result(record.result)
    elif detailed and record.state == "failed":
        out["error"] = {"code": INTERNAL_ERROR, "message": record.error or "failed"}
    return out


def legacy_task(record: TaskRecord) -> dict[str, Any]:
    """The 2025-11-25 `Task`."""
    return {**_common(record), "ttl": _ttl_ms(record), "pollInterval": POLL_INTERVAL_MS}


__all__ = ["EXTENSION_ID", "TASK_TOOLS", "TasksExtension", "legacy_task_middleware"]

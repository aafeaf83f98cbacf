"""Running tasks: start a tool as a task, renew its lease, take over the orphans of dead processes.

    runner = TaskRunner(store, toolbox, settings)
    runner.start_sweeping()                       # a server: take over tasks whose owner died
    task = await runner.start(INVESTIGATE, args, caller)    # `working`, running here
    await runner.cancel(task.id, caller)          # `cancelled`; the run stops before its next search
    await runner.aclose()                         # stops; this process's tasks go to another at once

One `TaskRunner` per process, named by `owner` (host, pid and a nonce). While a task runs here, a
heartbeat renews its lease every `min(lease/3, 1 s)` and stops the run when the task is no longer
this process's (cancelled by a request another replica answered, or taken over); the run's
`Checkpoint` also asks before each search, so a cancelled task starts no further upstream request.
Each finished search is kept (`TaskStore.keep`), so a process that takes a task over resumes it:
the searches already paid for are recalled, not sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..config import keys as K
from ..contract.errors import ZarniwoopError
from ..contract.query import SearchScope
from ..dispatch.profiles import ProfileChoice
from ..tools.registry import parse_arguments, tool_spec
from .store import TaskCaller, TaskRecord, TaskRequest, TaskStore

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..config.settings import SettingService
    from ..contract.progress import ProgressObserver, ProgressStep
    from ..tools.base import ToolSpec
    from ..tools.registry import Toolbox

log = logging.getLogger(__name__)
DEFAULT_TTL = 86400.0
DEFAULT_LEASE = 30.0
MAX_HEARTBEAT = 1.0
"""A running task learns of a cancellation made on another replica within this many seconds."""


class TaskRunner:
    def __init__(
        self, store: TaskStore, toolbox: Toolbox, settings: SettingService, *, owner: str | None = None
    ) -> None:
        self.store = store
        self.toolbox = toolbox
        self.settings = settings
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._running: dict[str, asyncio.Task[None]] = {}
        self._listeners: dict[str, list[ProgressObserver]] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._closing = False

    # -- settings ---------------------------------------------------------------------------------

    def lease(self) -> float:
        system = self.settings.scoped(SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL))
        return max(1.0, system.get_float(K.TASKS_LEASE_SECONDS, DEFAULT_LEASE) or DEFAULT_LEASE)

    def ttl(self, caller: TaskCaller) -> float:
        scoped = self.settings.scoped(SearchScope(caller.tenant, caller.project))
        return max(60.0, scoped.get_float(K.TASKS_TTL_SECONDS, DEFAULT_TTL) or DEFAULT_TTL)

    # -- the caller's side ------------------------------------------------------------------------

    async def start(
        self,
        spec: ToolSpec[Any],
        args: BaseModel,
        caller: TaskCaller,
        *,
        admin: bool = False,
        cache: bool = True,
        profile: ProfileChoice | None = None,
        progress: ProgressObserver | None = None,
        run_here: bool = True,
    ) -> TaskRecord:
        """Record the task and run it in this process (`run_here=False`: leave it to whichever
        process claims it first — a detached CLI's runner, or a server's sweep). `progress` hears
        its steps while it runs here (a connected client's notifications)."""
        choice = (profile or ProfileChoice()).narrowed(getattr(args, "profile", None))
        request = TaskRequest(
            # the tool's own arguments only (a route's body adds switches such as `cache`)
            args.model_dump(
                mode="json", by_alias=True, exclude_none=True, include=set(spec.input_model.model_fields)
            ),
            cache,
            choice.asked,
            choice.bound,
            admin,
        )
        owner = self.owner if run_here else None
        record = await self.store.create(
            caller, spec.name, request, ttl=self.ttl(caller), owner=owner, lease=self.lease()
        )
        if progress is not None:
            self._listeners[record.id] = [progress]
        if run_here:
            self._launch(record, spec, args, request)
        return record

    async def cancel(self, task_id: str, caller: TaskCaller) -> TaskRecord | None:
        """Cancel the caller's task (None: not found); a run here stops at once, one elsewhere at
        its next search or heartbeat."""
        record = await self.store.cancel(task_id, caller)
        running = self._running.get(task_id)
        if record is not None and record.state == "cancelled" and running is not None:
            running.cancel()
        return record

    async def wait(
        self, task_id: str, caller: TaskCaller, *, poll: float = 0.25, timeout: float | None = None
    ) -> TaskRecord | None:
        """The task once it is no longer `working` (None: not found). A run here is awaited; one on
        another process is polled."""
        async with asyncio.timeout(timeout):
            while True:
                record = await self.store.get(task_id, caller)
                if record is None or record.done:
                    return record
                running = self._running.get(task_id)
                if running is not None:
                    with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError):
                        await asyncio.wait_for(asyncio.shield(running), poll * 8)
                else:
                    await asyncio.sleep(poll)

    # -- the owner's side -------------------------------------------------------------------------

    def start_sweeping(self) -> asyncio.Task[None]:
        """Take over orphaned tasks every half lease (a server's background loop)."""
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_loop(), name="task-sweeper")
        return self._sweeper

    async def sweep(self) -> list[str]:
        """Claim the tasks whose lease lapsed and resume them here; the ids taken over."""
        claimed = await self.store.claim_orphans(self.owner, self.lease())
        for task_id in claimed:
            await self._resume(task_id)
        return claimed

    async def run_until_done(self, task_id: str) -> None:
        """Claim one task left to any process (a detached CLI's runner) and run it to its end."""
        if task_id not in await self.store.claim_orphans(self.owner, self.lease(), only=task_id):
            return
        await self._resume(task_id)
        running = self._running.get(task_id)
        if running is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await running

    async def aclose(self) -> None:
        """Stop sweeping and running; this process's unfinished tasks get a lapsed lease, so
        another process takes them over at its next sweep instead of after a whole lease."""
        self._closing = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        running = list(self._running.values())
        for task in running:
            task.cancel()
        for task in running:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(Exception):  # the database may already be away: the lease lapses anyway
            await self.store.release(self.owner)

    async def _resume(self, task_id: str) -> None:
        record = await self.store.read(task_id)
        if record is None:
            return
        try:
            request = await self.store.request_of(task_id)
            spec = tool_spec(record.tool)
            args = parse_arguments(spec, request.arguments)
        except (ZarniwoopError, LookupError, KeyError) as exc:
            reason = getattr(exc, "message", None) or "its request could not be read again"
            await self.store.finish(task_id, self.owner, "failed", ttl=self.ttl(record.caller), error=reason)
            return
        log.info("resuming task (run %d) on %s", record.runs, self.owner)
        self._launch(record, spec, args, request)

    def _launch(self, record: TaskRecord, spec: ToolSpec[Any], args: BaseModel, request: TaskRequest) -> None:
        task = asyncio.get_running_loop().create_task(
            self._run(record, spec, args, request), name=f"task-{record.tool}"
        )
        self._running[record.id] = task

    async def _run(
        self, record: TaskRecord, spec: ToolSpec[Any], args: BaseModel, request: TaskRequest
    ) -> None:
        task_id, ttl = record.id, self.ttl(record.caller)
        current = asyncio.current_task()
        assert current is not None
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(task_id, current))
        try:
            result = await self.toolbox.run(
                spec,
                args,
                SearchScope(record.caller.tenant, record.caller.project),
                admin=request.admin,
                cache=request.cache,
                progress=self._progress(task_id),
                profile=ProfileChoice(request.profile, request.bound_profile),
                checkpoint=_TaskCheckpoint(self.store, task_id, current),
            )
        except asyncio.CancelledError:
            return  # cancelled (the state says so already), taken over, or this process stopping
        except ZarniwoopError as exc:
            await self.store.finish(task_id, self.owner, "failed", ttl=ttl, error=exc.message)
        except Exception as exc:
            log.exception("task %s failed", record.tool)
            reason = f"internal error ({type(exc).__name__}); the server log has the details"
            await self.store.finish(task_id, self.owner, "failed", ttl=ttl, error=reason)
        else:
            answer = {
                "isError": result.is_error,
                "text": result.text,
                "structured": dict(result.structured),
                "full": dict(result.full if result.full is not None else result.structured),
            }
            await self.store.finish(task_id, self.owner, "completed", ttl=ttl, result=answer)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            self._running.pop(task_id, None)
            self._listeners.pop(task_id, None)

    async def _heartbeat(self, task_id: str, run: asyncio.Task[None]) -> None:
        """Renew the lease; stop the run once the task is not this process's any more."""
        while True:
            await asyncio.sleep(min(self.lease() / 3, MAX_HEARTBEAT))
            try:
                still_mine = await self.store.renew(task_id, self.owner, self.lease())
            except Exception as exc:  # the database briefly away: try again; the lease has slack
                log.warning("renewing a task's lease failed: %s", type(exc).__name__)
                continue
            if not still_mine:
                run.cancel()
                return

    def _progress(self, task_id: str) -> Callable[[ProgressStep], Awaitable[None]]:
        async def observe(step: ProgressStep) -> None:
            await self.store.record_progress(task_id, self.owner, step.to_json())
            for listener in self._listeners.get(task_id, ()):
                with contextlib.suppress(Exception):  # a client that went away stops nothing
                    await listener(step)

        return observe

    async def _sweep_loop(self) -> None:
        while not self._closing:
            try:
                await self.sweep()
            except Exception as exc:  # the database may be briefly away: the next round tries again
                log.warning("taking over orphaned tasks failed: %s", type(exc).__name__)
            await asyncio.sleep(max(0.5, self.lease() / 2))


class _TaskCheckpoint:
    """A run's `Checkpoint`: its task's finished steps; a cancelled task starts no further step."""

    def __init__(self, store: TaskStore, task_id: str, run: asyncio.Task[None]) -> None:
        self.store = store
        self.task_id = task_id
        self.run = run

    async def recall(self, key: str) -> Mapping[str, Any] | None:
        if await self.store.state_of(self.task_id) != "working":
            # cancelled meanwhile: the whole run stops (its other searches too), this one unsent
            self.run.cancel()
            raise asyncio.CancelledError
        return await self.store.recall(self.task_id, key)

    async def keep(self, key: str, value: Mapping[str, Any]) -> None:
        await self.store.keep(self.task_id, key, value)


__all__ = ["TaskRunner"]

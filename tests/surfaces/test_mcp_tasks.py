"""MCP tasks with the mcp SDK's client against `zarniwoop serve` (issue 45): `research_investigate`
as a task on 2026-07-28 (the `io.modelcontextprotocol/tasks` extension, through the client's own
`ClientExtension` claim) and on 2025-11-25 (the task augmentation): the handle at once, `tasks/get`
until `completed`, the result equal to a direct call's; `tasks/cancel` → `cancelled` and no further
upstream request; another tenant's token asking for the id → "Task not found"."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from mcp import Client, MCPError
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp_types import (
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    CancelTaskRequest,
    CancelTaskRequestParams,
    GetTaskPayloadRequest,
    GetTaskPayloadRequestParams,
    GetTaskRequest,
    GetTaskRequestParams,
    Result,
    TaskMetadata,
)
from pydantic import TypeAdapter

from ..support.bodies import openalex_works, wikipedia_pages
from ..support.emulator import Emulator, Reply
from ..support.runtime import endpoint, only, write_config
from ..support.served import Served, served

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group(__name__), pytest.mark.process]

TASKS = "io.modelcontextprotocol/tasks"
ARGS = {"question": "What evidence is there for off-target effects of CRISPR?", "maxResults": 5}
HELD = "/held/works"
RAW = TypeAdapter(dict[str, Any])


class CreatedTask(Result):
    """The 2026-07-28 `CreateTaskResult`: `resultType: "task"` and the task's fields inline."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class GetTask(GetTaskRequest):
    name_param = "taskId"  # SEP-2663: `Mcp-Name` carries the task id on the streamable HTTP transport


class CancelTask(CancelTaskRequest):
    name_param = "taskId"


async def poll(session: Any, task_id: str, request: type = GetTask) -> dict[str, Any]:
    """`tasks/get` until the task is no longer working (the server's pollIntervalMs, shortened)."""
    while True:
        task = await session.send_request(request(params=GetTaskRequestParams(task_id=task_id)), RAW)
        if task["status"] != "working":
            return task
        await asyncio.sleep(0.1)


class Tasks(ClientExtension):
    """The client side of the extension: claims `resultType: "task"`, resolves it by polling."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        async def resolve(created: CreatedTask, ctx: ClaimContext) -> CallToolResult:
            task = await poll(ctx.session, created.task_id)
            return CallToolResult.model_validate(task["result"], by_name=False)

        return [ResultClaim(result_type="task", model=CreatedTask, resolve=resolve)]


@dataclass
class Deployment:
    server: Served
    emulator: Emulator
    tokens: dict[str, str]
    release: threading.Event

    def client(self, who: str = "alice", **options: Any) -> tuple[httpx.AsyncClient, Client]:
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {self.tokens[who]}"}, timeout=60)
        return http, Client(streamable_http_client(f"{self.server.url}/mcp", http_client=http), **options)


async def _tokens(config: Path, home: Path) -> dict[str, str]:
    from zarniwoop.runtime import Runtime

    async with await Runtime.open(config, home=home) as runtime:
        return {
            who: (await runtime.tokens.create(tenant, project, "user", label=who)).token
            for who, tenant, project in (
                ("alice", "acme", "review"),
                ("globex", "globex", "review"),
                ("held", "acme", "held"),
            )
        }


@pytest.fixture(scope="module")
def deployment(tmp_path_factory) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("mcp-tasks")
    emulator = Emulator().start()
    emulator.add("/oa/works", Reply.json(openalex_works(2, "CRISPR off-target")))
    emulator.add("/wiki/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Off-target genome editing")))
    release = emulator.add_held(HELD, Reply.json(openalex_works(1)))
    settings = {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/wiki"),
        "research.investigate.minHits": 1,
        # nothing cached: a direct call and a task's run answer alike (`cached` would differ)
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.academic": 0,
        "research.cache.ttlSeconds.encyclopedia": 0,
        "research.allowPrivateEndpoints": True,  # the held project's endpoint is on the emulator
    }
    # project `held`: its academic searches wait upstream until `release` (the cancel test)
    tenants = {
        "acme": {
            "projects": {
                "held": {"settings": {**endpoint("oa", "openalex", f"{emulator.url}/held")}},
                "review": {},
            }
        },
        "globex": {"projects": {"review": {}}},
    }
    config = write_config(root, {"settings": settings, "tenants": tenants})
    tokens = asyncio.run(_tokens(config, root / "home"))
    try:
        with served(config, root / "home") as server:
            yield Deployment(server, emulator, tokens, release)
    finally:
        release.set()
        emulator.stop()


def _same_answer(task_result: dict[str, Any], direct: CallToolResult) -> None:
    def timeless(structured: dict[str, Any]) -> dict[str, Any]:
        return {**structured, "usage": {k: v for k, v in structured["usage"].items() if k != "durationMs"}}

    assert task_result["isError"] is False and direct.is_error is False
    assert timeless(task_result["structuredContent"]) == timeless(direct.structured_content)
    assert task_result["content"][0]["text"].splitlines()[0] == direct.content[0].text.splitlines()[0]


async def test_2026_a_task_handle_at_once_then_polled_to_the_direct_answer(deployment):
    http, client = deployment.client(extensions=[Tasks()])
    async with http, client:
        assert client.protocol_version == "2026-07-28"
        assert TASKS in (client.server_capabilities.extensions or {})
        created = await client.session.call_tool("research_investigate", ARGS, allow_claimed=True)
        assert isinstance(created, CreatedTask) and created.status == "working"
        assert created.poll_interval_ms == 1000 and created.ttl_ms == 86_400_000
        done = await poll(client.session, created.task_id)
        assert done["status"] == "completed" and done["resultType"] == "complete"
        direct = await client.call_tool("research_investigate", ARGS)  # no task: the plain answer
        _same_answer(done["result"], direct)
        resolved = await client.call_tool("research_investigate", ARGS)  # the claim's resolver polls
        assert resolved.structured_content["question"] == ARGS["question"]
        # the same token reads it over HTTP too
        over_http = await http.get(f"{deployment.server.url}/v1/tasks/{created.task_id}")
        assert over_http.json()["status"] == "completed"

    other_http, other = deployment.client("globex", extensions=[Tasks()])
    async with other_http, other:
        with pytest.raises(MCPError) as refused:
            await other.session.send_request(
                GetTask(params=GetTaskRequestParams(task_id=created.task_id)), RAW
            )
        assert (refused.value.error.code, refused.value.error.message) == (
            -32602,
            "Failed to retrieve task: Task not found",
        )
        assert (
            await other_http.get(f"{deployment.server.url}/v1/tasks/{created.task_id}")
        ).status_code == 404


async def test_2026_without_the_extension_a_call_answers_directly(deployment):
    http, client = deployment.client()
    async with http, client:
        result = await client.call_tool("research_investigate", ARGS)
        assert result.structured_content["question"] == ARGS["question"]


async def test_2025_11_25_task_augmentation(deployment):
    http, client = deployment.client(mode="legacy")
    async with http, client:
        assert client.protocol_version == "2025-11-25"
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["research_investigate"].execution.task_support == "optional"
        assert tools["research_search"].execution is None
        call = CallToolRequest(
            params=CallToolRequestParams(
                name="research_investigate", arguments=ARGS, task=TaskMetadata(ttl=60_000)
            )
        )
        created = await client.session.send_request(call, RAW)
        task = created["task"]
        assert task["status"] == "working" and task["pollInterval"] == 1000
        done = await poll(client.session, task["taskId"], GetTaskRequest)
        assert done["status"] == "completed" and "result" not in done
        payload = await client.session.send_request(
            GetTaskPayloadRequest(params=GetTaskPayloadRequestParams(task_id=task["taskId"])), RAW
        )
        assert payload["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
        direct = await client.call_tool("research_investigate", ARGS)
        _same_answer(payload, direct)


async def test_tasks_cancel_stops_the_run(deployment):
    http, client = deployment.client("held", extensions=[Tasks()])
    async with http, client:
        created = await client.session.call_tool("research_investigate", ARGS, allow_claimed=True)
        await _until(lambda: deployment.emulator.requests(HELD))
        ack = await client.session.send_request(
            CancelTask(params=CancelTaskRequestParams(task_id=created.task_id)), RAW
        )
        assert ack["resultType"] == "complete"
        done = await poll(client.session, created.task_id)
        assert done["status"] == "cancelled" and "result" not in done
        deployment.release.set()
        sent = len(deployment.emulator.requests())
        again = await poll(client.session, created.task_id)
        assert again["status"] == "cancelled"
    assert len(deployment.emulator.requests()) == sent
    assert len(deployment.emulator.requests(HELD)) == 1


async def _until(condition: Any) -> Any:
    from ..support.waiting import until_async

    return await until_async(condition, "the held search upstream")

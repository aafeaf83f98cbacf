"""`POST /v1/responses` under a real `zarniwoop serve` (issue 43): ten concurrent streams cut at random
events against a budget just above five calls are charged exactly what the upstream produced, the
budget overspent by at most one reservation — natively and bridged; and the OpenAI Agents SDK, with
its default model settings (the Responses API), runs a two-step tool loop through the gateway."""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from zarniwoop.surfaces.http.responses_wire import ResponsesRequest, to_chat_request

from ..support.emulator import Emulator
from ..support.gateway import gateway_tenants, prepare_gateway
from ..support.responses_upstream import AFTER_TOOL, PATHS, ToolLoopUpstream
from ..support.served import served
from ..support.settlement import Ledger, cut_after

pytestmark = [pytest.mark.xdist_group(__name__), pytest.mark.process]

openai = pytest.importorskip("openai", reason="these tests drive the real openai SDK (pip install openai)")

MODELS = {"responses": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-sonnet-4-5"}
PROMPT = "hi"
MAX_OUTPUT = 300
PROMPT_ESTIMATE = to_chat_request(
    ResponsesRequest.model_validate({"model": "m", "input": PROMPT}),
    {},
    [{"role": "user", "content": PROMPT}],
    history=False,
).estimated_input_tokens()
RESERVATION = PROMPT_ESTIMATE + MAX_OUTPUT
BUDGET = 5 * RESERVATION + 50
"""Just above five calls' reservations."""
LEVELS = ("account", "team", "tenant", "project")


@dataclass
class Gateway(Ledger):
    emulator: Emulator
    url: str
    tokens: dict[str, str]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    emulator = Emulator().start()
    directory = tmp_path_factory.mktemp("responses-served")
    tenants = gateway_tenants(emulator)
    acme = tenants["acme"]
    acme["settings"]["ai.provider.openai.responsesApi"] = True
    for wire in MODELS:
        acme["projects"][f"crowd-{wire}"] = {"team": "nlp", "llm": {"quota": {"monthly_tokens": BUDGET}}}
    setup = prepare_gateway(
        directory, emulator, tenants=tenants, tokens={f"crowd-{w}": (f"crowd-{w}", "mike") for w in MODELS}
    )
    try:
        with served(setup.config, setup.home) as server:
            yield Gateway(
                setup.config, setup.home, emulator, server.url, {"main": setup.token, **setup.tokens}
            )
    finally:
        emulator.stop()


@pytest.mark.parametrize("wire", list(MODELS))
def test_ten_concurrent_streams_cut_at_random_events_charge_what_the_upstream_produced(
    gateway: Gateway, wire: str
) -> None:
    gateway.emulator.reset()
    rng = random.Random(43)
    lock = threading.Lock()
    drawn: list[tuple[int, int]] = []

    def usage() -> tuple[int, int]:
        with lock:
            pair = (PROMPT_ESTIMATE, rng.randint(100, MAX_OUTPUT))
            drawn.append(pair)
            return pair

    ToolLoopUpstream(gateway.emulator, usage=usage, words=24, chunk_delay=0.3, chunks=2)
    project = f"crowd-{wire}"
    before = gateway.used(project)
    cuts = [rng.randint(1, 6) for _ in range(10)]

    def one(client: Any, cut: int) -> Any:
        create = client.responses.create
        return cut_after(
            lambda: create(
                model=MODELS[wire], input=PROMPT, max_output_tokens=MAX_OUTPUT, stream=True, store=False
            ),
            cut,
            openai.RateLimitError,
        )

    async def crowd() -> list[str]:
        client = openai.AsyncOpenAI(
            base_url=gateway.url + "/v1", api_key=gateway.tokens[project], max_retries=0
        )
        try:
            return await asyncio.gather(*(one(client, cut) for cut in cuts))
        finally:
            await client.close()

    outcomes = asyncio.run(crowd())
    admitted = outcomes.count("cut")
    path = PATHS[wire]
    # one upstream request per admitted call; the reservations the budget fits refuse the rest (a cut
    # stream settling early may let one more in: the overspend bound below is what must hold)
    assert len(gateway.emulator.requests(path)) == admitted == len(drawn), outcomes
    assert 4 <= admitted < len(cuts) and "refused" in outcomes, outcomes
    rows = gateway.settled(project, admitted)
    produced = sum(i + o for i, o in drawn)
    assert len(gateway.emulator.completed(path)) == admitted  # every stream read to its usage
    charged = gateway.charged(before, project)
    assert {level for level, _ in charged} == set(LEVELS)
    assert charged == {key: produced for key in charged}
    assert sum(i + o for i, o, _ in rows) == produced
    assert {outcome for *_, outcome in rows} <= {"cancelled", "ok"}
    assert charged[("project", project)] - BUDGET <= RESERVATION


@pytest.mark.parametrize("wire", list(MODELS))
def test_the_openai_agents_sdk_runs_a_two_step_tool_loop_through_the_gateway(
    gateway: Gateway, wire: str
) -> None:
    agents = pytest.importorskip("agents", reason="pip install openai-agents")
    gateway.emulator.reset()
    upstream = ToolLoopUpstream(gateway.emulator)
    asked: list[str] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """Today's weather in a city."""
        asked.append(city)
        return "21 C and sunny"

    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway.tokens["main"], max_retries=0)
    agents.set_tracing_disabled(True)  # traces would go to api.openai.com
    model = agents.OpenAIResponsesModel(model=MODELS[wire], openai_client=client)
    agent = agents.Agent(name="weather", instructions="Use the tool.", tools=[get_weather], model=model)

    async def run() -> Any:
        try:
            return await agents.Runner.run(agent, "What is the weather in Paris?")
        finally:
            await client.close()

    result = asyncio.run(run())
    assert result.final_output == AFTER_TOOL
    assert asked == ["Paris"]
    bodies = upstream.bodies(wire)
    assert len(bodies) == 2
    assert "21 C and sunny" in json.dumps(bodies[1])  # the tool's result went up in the second step

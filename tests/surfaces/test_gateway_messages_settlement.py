"""Every upstream token of a `/v1/messages` call is charged (issue 43), as on `/v1/chat/completions`
(`test_gateway_settlement.py`, whose method this follows): a real `zarniwoop serve`, the real
anthropic SDK, the loopback emulator as the upstream — an Anthropic-wire one (the stream relayed as
it came) and an OpenAI-wire one (bridged). Ten concurrent streams cut at random events against a
budget of just over five calls: what the ledger charged at every level is what the emulator
produced, one upstream request per admitted call, overspend at most one reservation. A
non-streamed call whose client hangs up and a stream cut by the idle deadline are charged too."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from zarniwoop.surfaces.http.anthropic_wire import MessagesRequest, to_chat_request

from ..support.emulator import Emulator, Reply
from ..support.gateway import MODELS, anthropic_message, gateway_tenants, prepare_gateway, upstream_path
from ..support.served import served
from ..support.settlement import Ledger, anthropic_two_part_stream, cut_after, random_streams, two_part_stream

pytestmark = pytest.mark.xdist_group(__name__)

anthropic = pytest.importorskip("anthropic", reason="these tests drive the real anthropic SDK")

MESSAGES = [{"role": "user", "content": "hi"}]
MAX_TOKENS = 300
_BODY = {"model": MODELS["anthropic"], "max_tokens": MAX_TOKENS, "messages": MESSAGES}
PROMPT_ESTIMATE = to_chat_request(MessagesRequest.model_validate(_BODY), _BODY).estimated_input_tokens()
"""What the gateway holds and charges for the prompt when the upstream never said."""
RESERVATION = PROMPT_ESTIMATE + MAX_TOKENS
CROWD_BUDGET = 5 * RESERVATION + 50
"""Five calls' holds fit at once, a sixth does not."""
STREAMS = {"anthropic": anthropic_two_part_stream, "openai": two_part_stream}
UPSTREAM_USAGE = (40, 160)
DEADLINE_STREAMED = "word " * 80
"""The text a stream cut by the deadline delivered: 400 characters, 100 tokens by the estimate."""


@dataclass
class Gateway(Ledger):
    emulator: Emulator | None = None
    url: str = ""
    tokens: dict[str, str] | None = None

    def client(self, project: str, **options: Any) -> Any:
        assert self.tokens is not None
        return anthropic.Anthropic(base_url=self.url, api_key=self.tokens[project], max_retries=0, **options)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    emulator = Emulator().start()
    tenants = gateway_tenants(emulator)
    projects = tenants["acme"]["projects"]
    names = ("crowd-anthropic", "crowd-openai", "gone", "deadline")
    for name in names:
        projects[name] = {"team": "nlp", "llm": {"quota": {"monthly_tokens": CROWD_BUDGET}}}
    projects["deadline"]["settings"] = {"ai.call.timeoutMs": 1000}  # the idle timeout between chunks
    setup = prepare_gateway(
        tmp_path_factory.mktemp("messages-settlement"),
        emulator,
        tenants=tenants,
        tokens={p: (p, "mike") for p in names},
    )
    try:
        with served(setup.config, setup.home) as server:
            yield Gateway(setup.config, setup.home, emulator, server.url, dict(setup.tokens))
    finally:
        emulator.stop()


@pytest.fixture
def gw(gateway: Gateway) -> Gateway:
    assert gateway.emulator is not None
    gateway.emulator.reset()
    return gateway


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_ten_concurrent_streams_cut_at_random_events_charge_what_the_upstream_produced(
    gw: Gateway, wire: str
) -> None:
    assert gw.emulator is not None and gw.tokens is not None
    project, path = f"crowd-{wire}", upstream_path(wire)
    rng = random.Random(43)
    answer = random_streams(rng, STREAMS[wire], PROMPT_ESTIMATE, MAX_TOKENS)
    gw.emulator.add(path, answer)
    before = gw.used(project)
    cuts = [rng.randint(1, 4) for _ in range(10)]

    def one(client: Any, cut: int) -> Any:
        create = client.messages.create
        return cut_after(
            lambda: create(model=MODELS[wire], max_tokens=MAX_TOKENS, messages=MESSAGES, stream=True),
            cut,
            anthropic.RateLimitError,
        )

    async def crowd() -> list[str]:
        assert gw.tokens is not None
        async with anthropic.AsyncAnthropic(
            base_url=gw.url, api_key=gw.tokens[project], max_retries=0
        ) as client:
            return await asyncio.gather(*(one(client, cut) for cut in cuts))

    outcomes = asyncio.run(crowd())
    gw.check_crowd(
        gw.emulator, path, project, before, outcomes, fits=5, budget=CROWD_BUDGET, reservation=RESERVATION
    )


def test_non_streamed_calls_whose_client_hangs_up_are_charged_the_upstreams_usage(gw: Gateway) -> None:
    assert gw.emulator is not None
    late = anthropic_message("a late answer", *UPSTREAM_USAGE, delay=2.0)
    gw.emulator.add(upstream_path("anthropic"), late)
    before = gw.used("gone")
    impatient = gw.client("gone", timeout=0.5)
    for _ in range(2):
        with pytest.raises(anthropic.APITimeoutError):
            impatient.messages.create(model=MODELS["anthropic"], max_tokens=100, messages=MESSAGES)
    assert gw.settled("gone", 2) == [(*UPSTREAM_USAGE, "cancelled")] * 2
    charged = gw.charged(before, "gone")
    assert charged == {key: 2 * sum(UPSTREAM_USAGE) for key in charged}
    assert len(gw.emulator.requests(upstream_path("anthropic"))) == 2


def test_a_stream_cut_by_the_idle_deadline_is_charged_prompt_and_streamed_tokens(gw: Gateway) -> None:
    assert gw.emulator is not None
    body = anthropic_two_part_stream(DEADLINE_STREAMED, "never arrives " * 10, UPSTREAM_USAGE)
    # the second half comes 3 s after the first: past the project's 1 s idle timeout
    gw.emulator.add(
        upstream_path("anthropic"),
        Reply(body=body, headers={"Content-Type": "text/event-stream"}, chunk_delay=3.0, chunks=2),
    )
    before = gw.used("deadline")
    received = ""
    with (
        pytest.raises(anthropic.APIError) as caught,
        gw.client("deadline").messages.stream(
            model=MODELS["anthropic"], max_tokens=100, messages=MESSAGES
        ) as stream,
    ):
        for piece in stream.text_stream:
            received += piece
    assert "stalled for 1.0s" in str(caught.value)
    assert received == DEADLINE_STREAMED
    prompt = to_chat_request(
        MessagesRequest.model_validate({**_BODY, "max_tokens": 100}), {**_BODY, "max_tokens": 100}
    ).estimated_input_tokens()
    expected = (prompt, len(DEADLINE_STREAMED) // 4)
    assert gw.settled("deadline", 1) == [(*expected, "cancelled")]
    charged = gw.charged(before, "deadline")
    assert charged == {key: sum(expected) for key in charged}

"""Every upstream token is charged (issue 25 item 1, `llm/settlement.py`): a real `zarniwoop serve`,
the real openai SDK, the loopback emulator as the upstream. A client that cuts a stream after its
first chunk, a stream cut by the idle deadline, a non-streamed call whose client hangs up: each
leaves a usage row with outcome `cancelled`, charged at every level with what the upstream produced,
and the budget they spent refuses the next call. Twenty concurrent streams cut at random chunks
against a budget of just over ten calls: what the ledger charged is what the emulator produced."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import pytest

from zarniwoop.surfaces.http.openai_wire import ChatCompletionRequest

from ..support.emulator import Emulator, Reply
from ..support.gateway import gateway_tenants, openai_completion, prepare_gateway, upstream_path
from ..support.served import served
from ..support.settlement import Ledger, cut_after, random_streams, two_part_stream

# its module-scoped server is set up once: the module's tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)

openai = pytest.importorskip("openai", reason="these tests drive the real openai SDK (pip install openai)")

MODEL = "openai:gpt-4o-mini"
PATH = upstream_path("openai")
MESSAGES = [{"role": "user", "content": "hi"}]
PROMPT = ChatCompletionRequest.model_validate({"model": MODEL, "messages": MESSAGES}).to_chat_request()
PROMPT_ESTIMATE = PROMPT.estimated_input_tokens()
"""What the gateway holds and charges for the prompt when the upstream never said."""

UPSTREAM_USAGE = (40, 160)
"""What the emulator says a whole answer cost (in its last chunk, or the completion's `usage`)."""
MAX_TOKENS = 100
RESERVATION = PROMPT_ESTIMATE + MAX_TOKENS
CUT_BUDGET = 3 * sum(UPSTREAM_USAGE) + RESERVATION + 50
"""Four calls fit (the fourth is admitted on 3 × 200 used), a fifth does not (800 + 112 > 762)."""
DEADLINE_STREAMED = "word " * 80
"""The text a stream cut by the deadline delivered: 400 characters, 100 tokens by the estimate."""
DEADLINE_CHARGE = PROMPT_ESTIMATE + len(DEADLINE_STREAMED) // 4
DEADLINE_BUDGET = 4 * DEADLINE_CHARGE + RESERVATION // 2
CROWD_MAX_TOKENS = 300
CROWD_RESERVATION = PROMPT_ESTIMATE + CROWD_MAX_TOKENS
CROWD_BUDGET = 10 * CROWD_RESERVATION + 50
MASTER_KEY = "settlement-replicas-share-this-passphrase"
TPM = sum(UPSTREAM_USAGE) + RESERVATION - 1
"""A per-minute token limit one cut stream's upstream usage plus the next call's hold passes."""


@dataclass
class Gateway(Ledger):
    emulator: Emulator = field(default_factory=Emulator)
    urls: list[str] = field(default_factory=list)
    """Each replica's base URL (one server, or two sharing PostgreSQL and Redis)."""
    tokens: dict[str, str] = field(default_factory=dict)

    def client(self, name: str, **options: Any) -> Any:
        return openai.OpenAI(
            base_url=self.urls[0] + "/v1", api_key=self.tokens[name], max_retries=0, **options
        )

    def ledger(self, project: str) -> dict[tuple[str, str], int]:
        return self.used(project)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    emulator = Emulator().start()
    directory = tmp_path_factory.mktemp("settlement")
    tenants = gateway_tenants(emulator)
    projects = tenants["acme"]["projects"]
    for name, budget in (("cut", CUT_BUDGET), ("gone", CUT_BUDGET), ("crowd", CROWD_BUDGET)):
        projects[name] = {"team": "nlp", "llm": {"quota": {"monthly_tokens": budget}}}
    projects["tpm"] = {"team": "nlp", "llm": {"quota": {"tokens_per_minute": TPM}}}
    projects["deadline"] = {
        "team": "nlp",
        "llm": {"quota": {"monthly_tokens": DEADLINE_BUDGET}},
        "settings": {"ai.call.timeoutMs": 1000},  # the idle timeout between a stream's chunks
    }
    setup = prepare_gateway(
        directory,
        emulator,
        tenants=tenants,
        tokens={p: (p, "mike") for p in ("cut", "gone", "crowd", "deadline", "tpm")},
    )
    try:
        with served(setup.config, setup.home) as server:
            yield Gateway(setup.config, setup.home, emulator, [server.url], dict(setup.tokens))
    finally:
        emulator.stop()


@pytest.fixture
def gw(gateway: Gateway) -> Gateway:
    gateway.emulator.reset()
    return gateway


def _refused(client: Any, **options: Any) -> Any:
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=MAX_TOKENS, **options)
    return caught.value


def test_four_streams_cut_after_the_first_chunk_are_charged_the_upstreams_usage(gw: Gateway) -> None:
    body = two_part_stream("The answer starts", "and goes on " * 20, UPSTREAM_USAGE)
    gw.emulator.add(
        PATH, Reply(body=body, headers={"Content-Type": "text/event-stream"}, chunk_delay=1.0, chunks=2)
    )
    before = gw.ledger("cut")
    client = gw.client("cut")
    for _ in range(4):
        stream = client.chat.completions.create(
            model=MODEL,
            messages=MESSAGES,
            max_tokens=MAX_TOKENS,
            stream=True,
            stream_options={"include_usage": True},
        )
        first = next(iter(stream))
        assert first.choices[0].delta.role == "assistant"
        stream.close()  # the socket goes: the rest of the answer is never read by the client
    rows = gw.settled("cut", 4)
    assert rows == [(*UPSTREAM_USAGE, "cancelled")] * 4
    assert len(gw.emulator.completed(PATH)) == 4  # the gateway read every upstream answer to its end
    charged = gw.charged(before, "cut")
    assert charged == {key: 4 * sum(UPSTREAM_USAGE) for key in charged}
    refused = _refused(client, stream=True)
    assert refused.body["code"] == "insufficient_quota" and refused.body["level"] == "project"
    assert len(gw.emulator.requests(PATH)) == 4  # the fifth call never left


def test_four_streams_cut_by_the_idle_deadline_are_charged_prompt_and_streamed_tokens(gw: Gateway) -> None:
    body = two_part_stream(DEADLINE_STREAMED, "never arrives " * 10, UPSTREAM_USAGE)
    # the second half comes 3 s after the first: past the project's 1 s idle timeout
    gw.emulator.add(
        PATH, Reply(body=body, headers={"Content-Type": "text/event-stream"}, chunk_delay=3.0, chunks=2)
    )
    before = gw.ledger("deadline")
    client = gw.client("deadline")
    for _ in range(4):
        received = ""
        with pytest.raises(openai.APIError) as caught:
            for piece in client.chat.completions.create(
                model=MODEL, messages=MESSAGES, max_tokens=MAX_TOKENS, stream=True
            ):
                received += (piece.choices[0].delta.content or "") if piece.choices else ""
        assert "stalled for 1.0s" in caught.value.message
        assert received == DEADLINE_STREAMED
    rows = gw.settled("deadline", 4)
    assert rows == [(PROMPT_ESTIMATE, len(DEADLINE_STREAMED) // 4, "cancelled")] * 4
    charged = gw.charged(before, "deadline")
    assert charged == {key: 4 * DEADLINE_CHARGE for key in charged}
    refused = _refused(client)
    assert refused.body["code"] == "insufficient_quota" and refused.body["level"] == "project"


def test_the_tokens_of_a_cut_stream_count_in_the_per_minute_window(gw: Gateway) -> None:
    body = two_part_stream("The answer starts", "and goes on " * 20, UPSTREAM_USAGE)
    gw.emulator.add(
        PATH, Reply(body=body, headers={"Content-Type": "text/event-stream"}, chunk_delay=0.5, chunks=2)
    )
    client = gw.client("tpm")
    stream = client.chat.completions.create(
        model=MODEL, messages=MESSAGES, max_tokens=MAX_TOKENS, stream=True
    )
    next(iter(stream))
    stream.close()
    assert gw.settled("tpm", 1) == [(*UPSTREAM_USAGE, "cancelled")]
    refused = _refused(client)  # 200 in the window + 112 held > 311
    assert refused.body["code"] == "rate_limit_exceeded" and refused.body["level"] == "project"
    assert len(gw.emulator.requests(PATH)) == 1


def test_non_streamed_calls_whose_client_hangs_up_are_charged_the_upstreams_usage(gw: Gateway) -> None:
    gw.emulator.add(PATH, openai_completion("a late answer", *UPSTREAM_USAGE, delay=2.0))
    before = gw.ledger("gone")
    impatient = gw.client("gone", timeout=0.5)
    for _ in range(4):
        with pytest.raises(openai.APITimeoutError):
            impatient.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=MAX_TOKENS)
    rows = gw.settled("gone", 4)
    assert rows == [(*UPSTREAM_USAGE, "cancelled")] * 4
    charged = gw.charged(before, "gone")
    assert charged == {key: 4 * sum(UPSTREAM_USAGE) for key in charged}
    refused = _refused(gw.client("gone"))
    assert refused.body["code"] == "insufficient_quota" and refused.body["level"] == "project"
    assert len(gw.emulator.requests(PATH)) == 4


def test_twenty_concurrent_streams_cut_at_random_chunks_charge_what_the_upstream_produced(
    gw: Gateway,
) -> None:
    _crowd(gw)


def test_twenty_streams_cut_at_random_over_two_replicas_on_postgres_and_redis(
    tmp_path, emulator, postgres_url, redis_config, monkeypatch
) -> None:
    # the same crowd, spread over two `zarniwoop serve` replicas sharing the ledger (PostgreSQL) and
    # the budgets' and windows' state (Redis)
    monkeypatch.setenv("ZARNIWOOP_MASTER_KEY", MASTER_KEY)
    tenants = gateway_tenants(emulator)
    tenants["acme"]["projects"]["crowd"] = {"team": "nlp", "llm": {"quota": {"monthly_tokens": CROWD_BUDGET}}}
    setup = prepare_gateway(
        tmp_path,
        emulator,
        tenants=tenants,
        backend={"database_url": postgres_url, **redis_config},
        tokens={"crowd": ("crowd", "mike")},
    )
    env = {"ZARNIWOOP_MASTER_KEY": MASTER_KEY}
    with ExitStack() as stack:
        urls = [
            stack.enter_context(served(setup.config, tmp_path / f"home{i}" if i else setup.home, env=env)).url
            for i in range(2)
        ]
        _crowd(Gateway(setup.config, setup.home, emulator, urls, dict(setup.tokens)))


def _crowd(gw: Gateway) -> None:
    rng = random.Random(25)
    answer = random_streams(rng, two_part_stream, PROMPT_ESTIMATE, CROWD_MAX_TOKENS)
    gw.emulator.add(PATH, answer)
    before = gw.ledger("crowd")
    cuts = [rng.randint(1, 4) for _ in range(20)]

    def one(client: Any, cut: int) -> Any:
        create = client.chat.completions.create
        return cut_after(
            lambda: create(model=MODEL, messages=MESSAGES, max_tokens=CROWD_MAX_TOKENS, stream=True),
            cut,
            openai.RateLimitError,
        )

    async def crowd() -> list[str]:
        clients = [
            openai.AsyncOpenAI(base_url=url + "/v1", api_key=gw.tokens["crowd"], max_retries=0)
            for url in gw.urls
        ]
        try:
            return await asyncio.gather(*(one(clients[i % len(clients)], cut) for i, cut in enumerate(cuts)))
        finally:
            for client in clients:
                await client.close()

    outcomes = asyncio.run(crowd())
    gw.check_crowd(
        gw.emulator,
        PATH,
        "crowd",
        before,
        outcomes,
        fits=10,
        budget=CROWD_BUDGET,
        reservation=CROWD_RESERVATION,
    )

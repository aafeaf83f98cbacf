"""`POST /v1/embeddings` on the gateway (issue 43), driven by the real openai SDK: the OpenAI, Gemini and
Ollama wires on the loopback emulator, `dimensions` and `encoding_format` carried to each, the
upstream's input tokens (or the gateway's estimate where the wire says none) settled at every
budget level with a usage row of purpose `embeddings`. In-process (the fast tier)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from zarniwoop.limits.token_budgets import QuotaLine
from zarniwoop.surfaces.http.embeddings_wire import EmbeddingRequest

from ..support.emulator import RecordedRequest, Reply
from ..support.gateway import MIKE_KEYS, live_gateway
from ..support.gateway import LiveGateway as Gateway

pytestmark = pytest.mark.xdist_group(__name__)

openai = pytest.importorskip("openai", reason="these tests drive the real openai SDK")

VECTORS = [[0.25, -0.5, 1.0], [0.125, 0.75, -1.0]]
TEXTS = ["the first text", "and a second one"]


def sdk(gw: Gateway) -> Any:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key=gw.setup.token, http_client=gw.http, max_retries=0)


def used(gw: Gateway) -> dict[str, int]:
    """This month's tokens at mike's account and team levels."""
    lines = [
        QuotaLine(level, owner, "monthly", None) for level, owner in (("account", "mike"), ("team", "nlp"))
    ]

    async def status(runtime: Any) -> dict[str, int]:
        return {s.line.level: s.used for s in await runtime.quota_ledger.status("acme", lines)}

    return gw.read(status)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with live_gateway(tmp_path_factory.mktemp("embeddings")) as gateway:
        yield gateway


def _openai_answer(request: RecordedRequest) -> Reply:
    from zarniwoop.llm.adapters.embeddings import base64_vector

    asked = request.json()
    encode = asked.get("encoding_format") == "base64"
    data = [
        {"object": "embedding", "index": i, "embedding": base64_vector(v) if encode else v}
        for i, v in enumerate(VECTORS)
    ]
    return Reply.json(
        {
            "object": "list",
            "data": data,
            "model": asked["model"],
            "usage": {"prompt_tokens": 9, "total_tokens": 9},
        }
    )


def test_embeddings_create_over_the_openai_wire_is_charged_in_the_ledger(gw: Gateway) -> None:
    gw.emulator.add("/v1/embeddings", _openai_answer)
    before = used(gw)
    answer = sdk(gw).embeddings.create(model="openai:text-embedding-3-small", input=TEXTS, dimensions=3)
    assert [d.embedding for d in answer.data] == VECTORS
    assert (answer.usage.prompt_tokens, answer.usage.total_tokens) == (9, 9)
    assert answer.model == "openai:text-embedding-3-small"
    [upstream] = gw.emulator.requests("/v1/embeddings")
    sent = upstream.json()
    assert (sent["model"], sent["input"], sent["dimensions"]) == ("text-embedding-3-small", TEXTS, 3)
    assert (
        sent["encoding_format"] == "base64"
    )  # what the SDK asked, forwarded; its strings relayed as they came
    assert upstream.header("authorization") == f"Bearer {MIKE_KEYS['openai']}"
    served = answer.model_extra["zarniwoop"]
    assert gw.usage_row(served["usage_id"]) == (
        "mike",
        "transformer-review",
        "openai",
        "text-embedding-3-small",
        "embeddings",
        9,
        0,
        "ok",
    )
    after = used(gw)
    assert {level: after[level] - before[level] for level in after} == {"account": 9, "team": 9}


def test_float_vectors_come_back_as_floats(gw: Gateway) -> None:
    gw.emulator.add("/v1/embeddings", _openai_answer)
    answer = sdk(gw).embeddings.create(
        model="openai:text-embedding-3-small", input="one", encoding_format="float"
    )
    assert [d.embedding for d in answer.data] == VECTORS
    assert gw.emulator.requests("/v1/embeddings")[0].json()["encoding_format"] == "float"


def test_embeddings_over_the_gemini_wire_are_charged_the_gateways_estimate(gw: Gateway) -> None:
    path = "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    gw.emulator.add(path, Reply.json({"embeddings": [{"values": v} for v in VECTORS]}))
    answer = sdk(gw).embeddings.create(model="gemini:gemini-embedding-001", input=TEXTS, dimensions=3)
    assert [d.embedding for d in answer.data] == VECTORS  # encoded by the gateway as the SDK asked
    [upstream] = gw.emulator.requests(path)
    assert upstream.json() == {
        "requests": [
            {
                "model": "models/gemini-embedding-001",
                "outputDimensionality": 3,
                "content": {"parts": [{"text": t}]},
            }
            for t in TEXTS
        ]
    }
    estimate = EmbeddingRequest(model="x", input=TEXTS).to_chat_request().estimated_input_tokens()
    assert answer.usage.prompt_tokens == estimate
    row = gw.usage_row(answer.model_extra["zarniwoop"]["usage_id"])[2:]
    assert row == ("gemini", "gemini-embedding-001", "embeddings", estimate, 0, "ok")


def test_embeddings_over_the_ollama_wire_are_charged_its_prompt_count(gw: Gateway) -> None:
    gw.emulator.add(
        "/local/api/embed",
        Reply.json({"model": "nomic-embed-text", "embeddings": VECTORS, "prompt_eval_count": 7}),
    )
    answer = sdk(gw).embeddings.create(model="ollama:nomic-embed-text", input=TEXTS)
    assert [d.embedding for d in answer.data] == VECTORS
    assert answer.usage.prompt_tokens == 7
    [upstream] = gw.emulator.requests("/local/api/embed")
    assert upstream.json() == {"model": "nomic-embed-text", "input": TEXTS}


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": [[1, 2, 3]]}, "input"),
        ({"input": "hi", "truncate": True}, "truncate"),
        ({"input": []}, "input"),
        ({"input": "hi", "encoding_format": "int8"}, "encoding_format"),
    ],
)
def test_what_the_gateway_cannot_carry_is_a_400_naming_it(
    gw: Gateway, body: dict[str, Any], param: str
) -> None:
    answer = gw.http.post(
        "/v1/embeddings",
        json={"model": "openai:text-embedding-3-small", **body},
        headers={"Authorization": f"Bearer {gw.setup.token}"},
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["param"].startswith(param)
    assert gw.emulator.requests() == []

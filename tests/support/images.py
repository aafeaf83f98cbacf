"""What the image tests share (tests/surfaces/test_gateway_images.py: Chat Completions' parts;
test_gateway_bridged_images.py: the Messages and Responses APIs' images, bridged): a gateway per
module, in-process for the fast tier and under a real `zarniwoop serve` for the process tier, each
wire's upstream answering with the same reported usage, and the images sent.

    gateway = pytest.fixture(scope="module", params=GATEWAYS, name="gateway")(image_gateway)
    gw = gw_fixture                              # per test: the emulator reset, every wire answering
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .emulator import Reply
from .gateway import MODELS, LiveGateway, anthropic_message, live_gateway, openai_completion, upstream_path

WIRE_MODELS = {**MODELS, "ollama": "ollama:llama3.1"}
PATHS = {wire: upstream_path(wire) for wire in MODELS} | {"ollama": "/local/api/chat"}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
"""A 1×1 PNG, base64."""
PHOTO = "https://images.example.org/cat.jpg"
PROMPT_TOKENS = 1612
"""What every emulated upstream reports as the input: the charge must be this, not the estimate."""
GATEWAYS = ["app", pytest.param("serve", marks=pytest.mark.process)]
"""In-process (the fast tier), and under a real `zarniwoop serve` (the process tier)."""


def image_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveGateway]:
    """The module's gateway, of the kind `request.param` names (`GATEWAYS`)."""
    with live_gateway(tmp_path_factory.mktemp("images"), request.param) as gateway:
        yield gateway


def answering(gateway: LiveGateway) -> LiveGateway:
    """The gateway with its emulator reset and every wire answering "A cat." (`PROMPT_TOKENS` in, 3 out)."""
    gateway.reset()
    for wire, path in PATHS.items():
        gateway.emulator.add(path, upstream_answer(wire))
    return gateway


def sent(gw: LiveGateway, wire: str) -> list[dict[str, Any]]:
    """The bodies `wire`'s upstream was sent."""
    return [r.json() for r in gw.emulator.requests(PATHS[wire])]


def upstream_answer(wire: str) -> Reply:
    """ "A cat." in `wire`'s shape, reporting `PROMPT_TOKENS` in and 3 out."""
    if wire == "openai":
        return openai_completion("A cat.", PROMPT_TOKENS, 3)
    if wire == "anthropic":
        return anthropic_message("A cat.", PROMPT_TOKENS, 3)
    bodies: dict[str, Any] = {
        "gemini": {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "A cat."}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": {"promptTokenCount": PROMPT_TOKENS, "totalTokenCount": PROMPT_TOKENS + 3},
        },
        "ollama": {
            "model": "llama3.1",
            "message": {"role": "assistant", "content": "A cat."},
            "done": True,
            "prompt_eval_count": PROMPT_TOKENS,
            "eval_count": 3,
        },
    }
    return Reply.json(bodies[wire])


gw_fixture = pytest.fixture(name="gw")(answering)
"""Each test's gateway (`answering`), of the module's `gateway` fixture."""

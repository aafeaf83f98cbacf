"""A gateway request as agents send them — a whole conversation with a fetched page or a screenshot,
several MiB — passes the request guard (32 MiB on the gateway's paths, 1 MiB elsewhere) and reaches the
upstream byte for byte, through the real openai and anthropic SDKs (`surfaces/http/guard.py`; the
over-cap 413s in each API's shape are in `test_http_guard.py`, on a real server's socket)."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from ..support.gateway import (
    MODELS,
    LiveGateway,
    anthropic_message,
    live_gateway,
    openai_completion,
    upstream_path,
)

# its module-scoped gateway is set up once: the module's tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)

openai = pytest.importorskip("openai", reason="these tests drive the real openai SDK (pip install openai)")
anthropic = pytest.importorskip("anthropic", reason="these tests drive the real anthropic SDK")


SCREENSHOT = base64.b64encode(bytes(range(256)) * (12 * 1024)).decode()
"""3 MiB of PNG-sized base64 (3,145,728 bytes encoded to 4 MiB): three times the guard's general cap."""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with live_gateway(tmp_path_factory.mktemp("bodycap")) as live:
        yield live


@pytest.fixture
def gw(gateway: LiveGateway) -> LiveGateway:
    return gateway.reset()


def test_a_chat_with_a_1_5_mib_tool_result_reaches_the_upstream_whole(gw: LiveGateway) -> None:
    gw.emulator.add(upstream_path("openai"), openai_completion("A login form.", 1_200, 5))
    page = "<div class='login'>" * (80 * 1024)  # a fetched page an agent hands back: 1.5 MB
    answer = gw.openai().chat.completions.create(
        model=MODELS["openai"],
        messages=[
            {"role": "user", "content": "What is on this page?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "fetch", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": page},
        ],
    )
    assert answer.choices[0].message.content == "A login form."
    [upstream] = gw.emulator.requests(upstream_path("openai"))
    assert len(upstream.body) > 1024 * 1024  # over the general cap
    assert upstream.json()["messages"][2]["content"] == page


def test_a_chat_with_a_4_mib_screenshot_reaches_the_upstream_whole(gw: LiveGateway) -> None:
    gw.emulator.add(upstream_path("openai"), openai_completion("A login form.", 1_612, 5))
    url = f"data:image/png;base64,{SCREENSHOT}"
    image = {"type": "image_url", "image_url": {"url": url}}
    answer = gw.openai().chat.completions.create(
        model=MODELS["openai"],
        messages=[{"role": "user", "content": [{"type": "text", "text": "What is on this screen?"}, image]}],
    )
    assert answer.choices[0].message.content == "A login form."
    [upstream] = gw.emulator.requests(upstream_path("openai"))
    assert len(upstream.body) > 4 * 1024 * 1024
    assert upstream.json()["messages"][0]["content"][1]["image_url"]["url"] == url


def test_a_message_with_a_4_mib_image_reaches_an_anthropic_upstream_whole(gw: LiveGateway) -> None:
    gw.emulator.add(upstream_path("anthropic"), anthropic_message("A login form.", 1_200, 5))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": SCREENSHOT}}
    client = anthropic.Anthropic(base_url=gw.url, http_client=gw.http, max_retries=0, api_key=gw.setup.token)
    message = client.messages.create(
        model=MODELS["anthropic"],
        max_tokens=64,
        messages=[{"role": "user", "content": [image, {"type": "text", "text": "What is on this screen?"}]}],
    )
    assert message.content[0].text == "A login form."
    [upstream] = gw.emulator.requests(upstream_path("anthropic"))
    assert upstream.json()["messages"][0]["content"][0]["source"]["data"] == SCREENSHOT


def test_a_search_still_stops_at_1_mib(gw: LiveGateway) -> None:
    body = b'{"query": "' + b"x" * (1024 * 1024) + b'", "modality": "web"}'
    answer = gw.http.post(
        "/v1/research/search",
        content=body,
        headers={"Authorization": f"Bearer {gw.setup.token}", "Content-Type": "application/json"},
    )
    assert (answer.status_code, answer.json()) == (
        413,
        {"error": {"message": "request body over 1048576 bytes"}},
    )

"""Timed OpenAI chat calls from concurrent clients, for `bench/gateway_overhead.py` and its peer bench.

    await timed_calls(Target(url, token, model), 200, clients=16)               # latency per call
    await timed_calls(target, 200, clients=16, stream=True)                     # time to first token

Each client keeps its connection alive and sends its calls one after another; `clients` of them
run at once. A call must answer as the emulated upstream does (`tests/support/gateway.py`
`openai_upstream`: usage 12 + 6; a stream with a content delta, ending `[DONE]`), else
`CallFailed` names the target and what came back.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from typing import Any

import httpx

COMPLETIONS = "/v1/chat/completions"
_CONTENT = re.compile(rb'"content":\s*"[^"]')
"""A delta carrying text (the role chunk's `"content":""` carries none): the first token is there."""


class CallFailed(Exception):
    """A call that did not answer as the upstream does: the bench's figures would be a failure's."""


@dataclass(frozen=True)
class Target:
    name: str
    url: str
    """The base URL: `<url>/v1/chat/completions` is called."""
    token: str
    model: str

    def body(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "model": self.model}


async def _plain(http: httpx.AsyncClient, target: Target, body: dict[str, Any]) -> float:
    began = time.perf_counter()
    response = await http.post(target.url + COMPLETIONS, json=body)
    elapsed = time.perf_counter() - began
    if response.status_code != 200 or response.json().get("usage", {}).get("total_tokens") != 18:
        raise CallFailed(f"{target.name}: HTTP {response.status_code}: {response.text[:300]}")
    return elapsed


async def _streamed(http: httpx.AsyncClient, target: Target, body: dict[str, Any]) -> float:
    """Seconds from sending the call to the first delta that carries text."""
    began = time.perf_counter()
    first: float | None = None
    received = b""
    async with http.stream("POST", target.url + COMPLETIONS, json=body) as response:
        async for chunk in response.aiter_raw():
            received += chunk
            if first is None and _CONTENT.search(received):
                first = time.perf_counter() - began
    if response.status_code != 200 or first is None or not received.rstrip().endswith(b"[DONE]"):
        raise CallFailed(f"{target.name}: HTTP {response.status_code} (streamed): {received[:300]!r}")
    return first


async def timed_calls(
    target: Target,
    n: int,
    body: dict[str, Any],
    *,
    clients: int = 16,
    stream: bool = False,
    failures: list[str] | None = None,
) -> list[float]:
    """`n` calls (rounded down to a multiple of `clients`, at least one each) from `clients` at once:
    the seconds each took, or with `stream` each one's time to first token. A call the network
    failed (a connection reset) is left out of the timings and said in `failures` when one is
    given; without it, it raises `CallFailed`, as a wrong answer always does."""
    headers = {"Authorization": f"Bearer {target.token}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    sent = target.body(body)
    call = _streamed if stream else _plain
    async with httpx.AsyncClient(headers=headers, limits=limits, timeout=60) as http:

        async def client(count: int) -> list[float]:
            timed = []
            for _ in range(count):
                try:
                    timed.append(await call(http, target, sent))
                except httpx.TransportError as exc:
                    if failures is None:
                        raise CallFailed(f"{target.name}: {type(exc).__name__} {exc}") from exc
                    failures.append(
                        f"{target.name}{' (streamed)' if stream else ''}: {type(exc).__name__} {exc}"
                    )
            return timed

        each = await asyncio.gather(*(client(max(1, n // clients)) for _ in range(clients)))
    return [seconds for samples in each for seconds in samples]

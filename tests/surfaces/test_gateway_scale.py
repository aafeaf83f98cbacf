"""The gateway under load: 50 concurrent SDK calls against a budget that fits 20 make exactly 20
upstream calls — on one server over SQLite, and on two `zarniwoop serve` replicas sharing
PostgreSQL and Redis; `requests_per_minute: 10` over two replicas lets at most 10 calls a minute
reach the upstream, the rest answered 429 with `Retry-After`. The one server is the app in-process
(the SDK over httpx's ASGI transport: the same concurrency in one event loop); the replicas are real."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from zarniwoop.surfaces.http import create_app
from zarniwoop.surfaces.http.openai_wire import ChatCompletionRequest

from ..support.emulator import Emulator
from ..support.gateway import MODELS, gateway_tenants, openai_completion, prepare_gateway, upstream_path
from ..support.served import served

openai = pytest.importorskip(
    "openai", reason="the gateway tests drive the real openai SDK (pip install openai)"
)

CALLS = 50
FITS = 20
MAX_TOKENS = 16
MESSAGES = [{"role": "user", "content": "Count to three."}]
MASTER_KEY = "gateway-replicas-share-this-passphrase"


def _reserved_per_call() -> int:
    """What the budget holds for one call (input estimate + max_tokens): the emulator reports exactly
    this as the call's usage, so every settled call costs what it held and the arithmetic is exact."""
    body = ChatCompletionRequest(model=MODELS["openai"], messages=MESSAGES, max_tokens=MAX_TOKENS)  # type: ignore[arg-type]
    request = body.to_chat_request()
    return request.estimated_input_tokens() + request.max_tokens


def _tenants(emulator: Emulator, quota: dict[str, Any]) -> dict[str, Any]:
    tenants = gateway_tenants(emulator)
    tenants["acme"]["projects"]["burst"] = {"team": "nlp", "llm": {"quota": quota}}
    return tenants


async def _fire(
    urls: list[str], token: str, calls: int, http_client: httpx.AsyncClient | None = None
) -> list[Any]:
    """`calls` concurrent chat completions spread round-robin over the replicas' URLs."""
    clients = [
        openai.AsyncOpenAI(base_url=url + "/v1", api_key=token, max_retries=0, http_client=http_client)
        for url in urls
    ]
    try:
        return await asyncio.gather(
            *(
                clients[i % len(clients)].chat.completions.create(
                    model=MODELS["openai"], messages=MESSAGES, max_tokens=MAX_TOKENS
                )
                for i in range(calls)
            ),
            return_exceptions=True,
        )
    finally:
        for client in clients:
            await client.close()


def _run_burst(
    tmp_path: Path,
    emulator: Emulator,
    replicas: int,
    backend: dict[str, Any] | None,
    quota: dict[str, Any],
    calls: int = CALLS,
) -> tuple[list[Any], int]:
    reserved = _reserved_per_call()
    emulator.add(
        upstream_path("openai"), openai_completion("1, 2, 3", reserved - MAX_TOKENS, MAX_TOKENS, delay=0.05)
    )
    setup = prepare_gateway(
        tmp_path,
        emulator,
        tenants=_tenants(emulator, quota),
        backend=backend,
        tokens={"burst": ("burst", "mike")},
    )
    if replicas == 1:
        results = asyncio.run(_fire_in_process(setup.config, setup.home, setup.tokens["burst"], calls))
        return results, len(emulator.requests(upstream_path("openai")))
    env = {"ZARNIWOOP_MASTER_KEY": MASTER_KEY} if backend else None
    with ExitStack() as stack:
        urls = [
            stack.enter_context(served(setup.config, tmp_path / f"home{i}" if i else setup.home, env=env)).url
            for i in range(replicas)
        ]
        results = asyncio.run(_fire(urls, setup.tokens["burst"], calls))
    return results, len(emulator.requests(upstream_path("openai")))


async def _fire_in_process(config: Path, home: Path, token: str, calls: int) -> list[Any]:
    """`_fire` at the app `serve` runs, in-process: its lifespan opens the runtime as serving does."""
    app = create_app(config=config, home=home)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http,
    ):
        return await _fire(["http://127.0.0.1"], token, calls, http)


def _check_exactly_twenty(results: list[Any], upstream: int) -> None:
    done = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, openai.RateLimitError)]
    assert upstream == FITS, f"{upstream} upstream calls for a budget that fits {FITS}"
    assert len(done) == FITS and len(refused) == CALLS - FITS, [type(r).__name__ for r in results]
    assert {r.body["level"] for r in refused} == {"project"}
    assert all(r.body["code"] == "insufficient_quota" for r in refused)


def test_fifty_concurrent_calls_against_a_budget_for_twenty_make_exactly_twenty_upstream_calls_on_sqlite(
    tmp_path: Path, emulator: Emulator
) -> None:
    reserved = _reserved_per_call()
    results, upstream = _run_burst(
        tmp_path, emulator, 1, None, {"monthly_tokens": FITS * reserved + reserved // 2}
    )
    _check_exactly_twenty(results, upstream)


@pytest.fixture
def replicas_backend(
    postgres_url: str, redis_config: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """What two replicas share: PostgreSQL, Redis and the master key."""
    monkeypatch.setenv("ZARNIWOOP_MASTER_KEY", MASTER_KEY)
    return {"database_url": postgres_url, **redis_config}


def test_fifty_concurrent_calls_over_two_replicas_on_postgres_and_redis_make_exactly_twenty(
    tmp_path: Path, emulator: Emulator, replicas_backend: dict[str, str]
) -> None:
    reserved = _reserved_per_call()
    backend = replicas_backend
    results, upstream = _run_burst(
        tmp_path, emulator, 2, backend, {"monthly_tokens": FITS * reserved + reserved // 2}
    )
    _check_exactly_twenty(results, upstream)


def test_requests_per_minute_over_two_replicas_lets_at_most_ten_through(
    tmp_path: Path, emulator: Emulator, replicas_backend: dict[str, str]
) -> None:
    results, upstream = _run_burst(
        tmp_path, emulator, 2, replicas_backend, {"requests_per_minute": 10}, calls=30
    )
    done = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, openai.RateLimitError)]
    assert upstream == len(done) == 10  # one window (60 s) is far longer than this burst
    assert len(refused) == 20
    for error in refused:
        assert error.body["code"] == "rate_limit_exceeded" and error.body["level"] == "project"
        assert 1 <= int(error.response.headers["retry-after"]) <= 60

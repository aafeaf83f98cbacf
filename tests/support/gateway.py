"""A gateway to test against: the seed's org tree (tests/support/llm.py) plus an OpenAI-wire key for
mike, every wire pointed at the loopback emulator, an account-bound token, and the recorded answers.

    setup = prepare_gateway(tmp_path, emulator)            # config written, keys and token stored
    with served(setup.config, setup.home) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key=setup.token, max_retries=0)

Also used by `bench/gateway_overhead.py` and `bench/instructions.py`.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zarniwoop.runtime import Runtime

from .emulator import Emulator, RecordedRequest, Reply
from .llm import KEYS, seed_tenants, trusting
from .runtime import write_config
from .served import Served, served

OPENAI_KEY = "sk-MIKE-0006-openai-personal"
MODELS = {
    "openai": "openai:gpt-4o-mini",
    "anthropic": "anthropic:claude-sonnet-4-5",
    "gemini": "gemini:gemini-2.5-pro",
}
"""One model spec per upstream wire; mike has a key of his own for each."""
MIKE_KEYS = {
    "openai": OPENAI_KEY,
    "anthropic": KEYS[("account", "mike", "cred_mike_anthropic")],
    "gemini": KEYS[("account", "mike", "cred_mike_google")],
}


def upstream_path(wire: str, stream: bool = False) -> str:
    """Where the emulator answers each wire (the OpenAI base URL is `<emulator>/v1`)."""
    if wire == "openai":
        return "/v1/chat/completions"
    if wire == "anthropic":
        return "/v1/messages"
    model = MODELS["gemini"].split(":", 1)[1]
    return f"/v1beta/models/{model}:{'streamGenerateContent' if stream else 'generateContent'}"


def sent_key(wire: str, request: Any) -> str | None:
    """The key an upstream request carried, read the way each wire sends it."""
    if wire == "openai":
        return (request.header("authorization") or "").removeprefix("Bearer ")
    return request.header("x-api-key" if wire == "anthropic" else "x-goog-api-key")


def gateway_tenants(emulator: Emulator, **extra_accounts: dict[str, Any]) -> dict[str, Any]:
    tenants = copy.deepcopy(seed_tenants(emulator))
    acme = tenants["acme"]
    acme["settings"]["ai.provider.openai.baseUrl"] = emulator.url + "/v1"
    acme["accounts"]["mike"]["llm"]["providers"].append(
        {"provider": "openai", "model": "gpt-4o-mini", "api_key_ref": "cred_mike_openai", "priority": 3}
    )
    acme["accounts"].update(extra_accounts)
    return tenants


@dataclass(frozen=True)
class GatewaySetup:
    config: Path
    home: Path
    token: str
    """A user token for acme/transformer-review bound to account mike."""
    tokens: Mapping[str, str]
    """Further tokens by name (see `prepare_gateway(tokens=…)`)."""


def prepare_gateway(
    directory: Path,
    emulator: Emulator,
    *,
    tenants: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    backend: Mapping[str, Any] | None = None,
    tokens: Mapping[str, tuple[str, str | None]] | None = None,
) -> GatewaySetup:
    """Write the config, store the seed's keys and mike's OpenAI key, and create the tokens.

    `tokens`: name → (project, account or None), all user tokens of tenant acme."""
    # The seed's tenant-level base URLs are the loopback emulator's: the operator allows that.
    config = {
        "settings": trusting(settings),
        "tenants": tenants or gateway_tenants(emulator),
        **(backend or {}),
    }
    path = write_config(directory, config)
    home = directory / "home"

    async def setup() -> tuple[str, dict[str, str]]:
        runtime = await Runtime.open(path, home=home)
        try:
            for (level, owner, name), value in KEYS.items():
                await runtime.credentials.set("acme", level, owner, name, value)
            await runtime.credentials.set("acme", "account", "mike", "cred_mike_openai", OPENAI_KEY)
            main = await runtime.tokens.create("acme", "transformer-review", "user", account="mike")
            more = {}
            for name, (project, account) in (tokens or {}).items():
                more[name] = (await runtime.tokens.create("acme", project, "user", account=account)).token
            return main.token, more
        finally:
            await runtime.aclose()

    token, more = asyncio.run(setup())
    return GatewaySetup(path, home, token, more)


def read_runtime(config: Path, home: Path, query: Callable[[Runtime], Awaitable[Any]]) -> Any:
    """What `query` reads of a runtime opened on a gateway's config (its ledger, its rows)."""

    async def read() -> Any:
        runtime = await Runtime.open(config, home=home)
        try:
            return await query(runtime)
        finally:
            await runtime.aclose()

    return asyncio.run(read())


def read_rows(config: Path, home: Path, sql: str, *args: Any) -> list[Any]:
    """The rows of one query against a gateway's database."""
    return list(read_runtime(config, home, lambda runtime: runtime.db.fetchall(sql, args)))


@dataclass
class LiveGateway:
    """A running gateway — in-process under Starlette's test client (the fast tier's) or a real
    `zarniwoop serve` (the `process` tier's) — with its emulator and its setup."""

    emulator: Emulator
    setup: GatewaySetup
    http: Any
    """An `httpx.Client` on the gateway (in-process: Starlette's test client, which SDKs send through)."""
    url: str
    server: Served | None
    """The `zarniwoop serve` process, or None in-process."""

    @property
    def tokens(self) -> dict[str, str]:
        """Every token of the set-up by name, the account-bound default one as `main`."""
        return {"main": self.setup.token, **self.setup.tokens}

    def openai(self, token: str | None = None) -> Any:
        """The openai SDK on the gateway (in-process it sends through the test client)."""
        import openai

        http = self.http if self.server is None else None
        return openai.OpenAI(
            base_url=self.url.rstrip("/") + "/v1",
            api_key=token or self.setup.token,
            max_retries=0,
            http_client=http,
        )

    def anthropic(self, token: str | None = None) -> Any:
        """The anthropic SDK on the gateway, the token as its `x-api-key` (in-process it sends
        through the test client)."""
        import anthropic

        http = self.http if self.server is None else None
        return anthropic.Anthropic(
            base_url=self.url, api_key=token or self.setup.token, max_retries=0, http_client=http
        )

    def reset(self) -> LiveGateway:
        """The emulator without routes or log (per test; the gateway is per module)."""
        self.emulator.reset()
        return self

    def read(self, query: Callable[[Runtime], Awaitable[Any]]) -> Any:
        """What `query` reads of a runtime opened on the gateway's config (its ledger, its rows)."""
        return read_runtime(self.setup.config, self.setup.home, query)

    def rows(self, sql: str, *args: Any) -> list[Any]:
        return read_rows(self.setup.config, self.setup.home, sql, *args)

    def usage_row(self, usage_id: str) -> tuple[Any, ...]:
        """`(account, project, provider, model, purpose, tokens_input, tokens_output, outcome)`."""
        sql = (
            "SELECT account, project, provider, model, purpose, tokens_input, tokens_output, outcome"
            " FROM llm_usage_records WHERE id = ?"
        )
        return tuple(self.read(lambda runtime: runtime.db.fetchone(sql, (usage_id,))))


@contextmanager
def _emulated(
    directory: Path, tenants: Callable[[Emulator], dict[str, Any]] | None, prepare: dict[str, Any]
) -> Iterator[tuple[Emulator, GatewaySetup]]:
    """A started emulator and a gateway set up against it (`prepare_gateway(**prepare)`, `tenants`
    built for the emulator)."""
    emulator = Emulator().start()
    try:
        if tenants is not None:
            prepare["tenants"] = tenants(emulator)
        yield emulator, prepare_gateway(directory, emulator, **prepare)
    finally:
        emulator.stop()


@contextmanager
def app_gateway(
    directory: Path, *, tenants: Callable[[Emulator], dict[str, Any]] | None = None, **prepare: Any
) -> Iterator[LiveGateway]:
    """`live_gateway` in-process only (a server's 500 is an answer, not a raise): what a module
    without a served twin uses, so that the collection scan (`support/processes.py`), which sees
    `live_gateway`'s served branch, keeps its tests in the fast tier."""
    from fastapi.testclient import TestClient

    from zarniwoop.surfaces.http import create_app

    with _emulated(directory, tenants, prepare) as (emulator, setup):
        app = create_app(config=setup.config, home=setup.home)
        with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as http:
            yield LiveGateway(emulator, setup, http, str(http.base_url), None)


@contextmanager
def live_gateway(
    directory: Path,
    kind: str = "app",
    *,
    tenants: Callable[[Emulator], dict[str, Any]] | None = None,
    **prepare: Any,
) -> Iterator[LiveGateway]:
    """A started emulator, a gateway prepared against it (`prepare_gateway(**prepare)`, `tenants`
    built for the emulator), running in-process (`app`: `app_gateway`) or under a real
    `zarniwoop serve` (`serve`)."""
    import httpx

    if kind == "app":
        with app_gateway(directory, tenants=tenants, **prepare) as gateway:
            yield gateway
        return
    with (
        _emulated(directory, tenants, prepare) as (emulator, setup),
        served(setup.config, setup.home) as server,
        httpx.Client(base_url=server.url) as http,
    ):
        yield LiveGateway(emulator, setup, http, server.url, server)


def openai_completion(
    text: str, prompt_tokens: int, completion_tokens: int, model: str = "gpt-4o-mini", **reply: Any
) -> Reply:
    """A synthetic OpenAI chat completion with exactly this usage (for budget arithmetic); `reply`
    goes to `Reply` (`delay=…`)."""
    return Reply.json(
        {
            "id": "chatcmpl-emulated",
            "object": "chat.completion",
            "created": 1,
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
        **reply,
    )


def anthropic_message(text: str, input_tokens: int, output_tokens: int, **reply: Any) -> Reply:
    """A synthetic Anthropic Messages answer of one text block with exactly this usage; `reply` goes to
    `Reply` (`delay=…`)."""
    return Reply.json(
        {
            "id": "msg_emulated",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        },
        **reply,
    )


def openai_text_stream(text: str, usage: tuple[int, int]) -> bytes:
    """OpenAI's SSE framing of `text` in word-sized deltas, usage in a last `choices: []` chunk."""
    words = text.split(" ")
    pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
    base = {
        "id": "chatcmpl-emulated",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
    }
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    chunks += [{**base, "choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    chunks.append(
        {
            **base,
            "choices": [],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
        }
    )
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def openai_chunks(choices: list[list[dict[str, Any]]], usage: Any = None, **fields: Any) -> Reply:
    """An OpenAI SSE stream: one `chat.completion.chunk` per element of `choices` (each chunk's
    `choices`), `fields` on every chunk, then — when `usage` is not None — a `choices: []` usage chunk."""
    base = {
        "id": "chatcmpl-emulated",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
    }
    chunks = [{**base, **fields, "choices": c} for c in choices]
    if usage is not None:
        chunks.append({**base, **fields, "choices": [], "usage": usage})
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    return Reply(body=body, headers={"Content-Type": "text/event-stream"})


STREAM_TEXT = "I am fine, thanks for asking."


def openai_upstream(request: RecordedRequest) -> Reply:
    """The benches' OpenAI upstream: a completion, or its SSE stream when the request asks for one
    (usage 12 + 6 either way)."""
    if request.json().get("stream"):
        body = openai_text_stream(STREAM_TEXT, (12, 6))
        return Reply(body=body, headers={"Content-Type": "text/event-stream"})
    return openai_completion("I'm fine, thanks.", 12, 6)

"""Helpers for LLM-call tests: the seed's org tree against the emulator, fixture replies, a recorder
for backoff sleeps."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from zarniwoop.limits.clock import Clock
from zarniwoop.runtime import Runtime

from .emulator import Emulator, Reply
from .paths import fixture_bytes
from .runtime import write_config

ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"


def gemini_path(model: str) -> str:
    return f"/v1beta/models/{model}:generateContent"


KEYS = {
    ("account", "mike", "cred_mike_anthropic"): "sk-ant-MIKE-0001-personal",
    ("account", "mike", "cred_mike_google"): "AIza-MIKE-0002-personal",
    ("project", "transformer-review", "cred_proj_grant_anthropic"): "sk-ant-GRANT-0003-project",
    ("team", "nlp", "cred_team_anthropic"): "sk-ant-TEAM-0004-shared",
    ("tenant", None, "cred_tenant_google"): "AIza-TENANT-0005-company",
}
"""The seed's credentials (seed 002 §2), one fake key each; tests grep for these."""


ALLOW_LOOPBACK = {"research.allowPrivateEndpoints": True}
"""The operator's system-level switch that lets a tenant's `ai.provider.X.baseUrl` (and a tenant's
search endpoint) reach the loopback emulator; without it the SSRF guard refuses 127.0.0.1."""


def trusting(settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """System settings with `ALLOW_LOOPBACK` on (a test's own value of the switch wins)."""
    return {**ALLOW_LOOPBACK, **(settings or {})}


def seed_tenants(emulator: Emulator) -> dict[str, Any]:
    """Seed 002 §2 as a `tenants:` tree, models the bundled catalog prices."""
    return {
        "acme": {
            "settings": {
                "ai.provider.anthropic.baseUrl": emulator.url,
                "ai.provider.gemini.baseUrl": emulator.url,
                "ai.provider.ollama.baseUrl": emulator.url + "/local",
            },
            "llm": {
                "providers": [
                    {
                        "provider": "google",
                        "model": "gemini-2.5-pro",
                        "api_key_ref": "cred_tenant_google",
                        "priority": 10,
                    },
                ],
            },
            "teams": {
                "nlp": {
                    "llm": {
                        "providers": [{"provider": "anthropic", "api_key_ref": "cred_team_anthropic"}],
                        "quota": {"monthly_tokens": 20_000_000},
                    }
                }
            },
            "accounts": {
                "mike": {
                    "teams": ["nlp"],
                    "llm": {
                        "providers": [
                            {
                                "provider": "anthropic",
                                "model": "claude-sonnet-4-5",
                                "api_key_ref": "cred_mike_anthropic",
                                "priority": 1,
                            },
                            {
                                "provider": "google",
                                "model": "gemini-2.5-pro",
                                "api_key_ref": "cred_mike_google",
                                "priority": 2,
                            },
                        ],
                        "quota": {
                            "daily_tokens": 500_000,
                            "monthly_tokens": 10_000_000,
                            "max_tokens_per_call": 8192,
                        },
                        "preferences": {
                            "default_model": "claude-sonnet-4-5",
                            "planning_model": "claude-sonnet-4-5",
                            "execution_model": "claude-sonnet-4-5",
                            "light_model": "gemini-2.5-flash",
                        },
                    },
                },
                "sarah": {"teams": ["nlp"]},
            },
            "projects": {
                "transformer-review": {
                    "team": "nlp",
                    "llm": {
                        "providers": [
                            {
                                "provider": "anthropic",
                                "model": "claude-sonnet-4-5",
                                "api_key_ref": "cred_proj_grant_anthropic",
                                "priority": 1,
                            },
                        ],
                        "quota": {"monthly_tokens": 5_000_000, "max_tokens_per_call": 16384},
                        "preferences": {
                            "planning_model": "claude-sonnet-4-5",
                            "execution_model": "claude-sonnet-4-5",
                        },
                    },
                },
                "architecture": {"team": "nlp"},
            },
        }
    }


async def open_llm_runtime(
    directory: Path,
    tenants: dict[str, Any],
    *,
    settings: dict[str, Any] | None = None,
    keys: dict | None = None,
) -> Runtime:
    """A runtime with `tenants` and the credentials in `keys` (default: the seed's) stored; the
    system level allows private endpoints (`ALLOW_LOOPBACK`: the tenants' URLs are the emulator's)."""
    path = write_config(directory, {"settings": trusting(settings), "tenants": copy.deepcopy(tenants)})
    runtime = await Runtime.open(path, home=directory / "home")
    store = runtime.credentials
    for (level, owner, name), value in (KEYS if keys is None else keys).items():
        await store.set("acme", level, owner, name, value)
    return runtime


def anthropic_reply(name: str = "anthropic/messages-text.json", **kw: Any) -> Reply:
    return Reply(
        body=fixture_bytes("llm", *name.split("/")), headers={"Content-Type": "application/json"}, **kw
    )


def gemini_reply(name: str = "gemini/generate-content-text.json", **kw: Any) -> Reply:
    return Reply(
        body=fixture_bytes("llm", *name.split("/")), headers={"Content-Type": "application/json"}, **kw
    )


class Sleeps(Clock):
    """A `Clock` whose `sleep` records the waits instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


async def manager_for(runtime: Runtime, sleeps: Sleeps | None = None, environ: dict[str, str] | None = None):
    manager = await runtime.llm()
    if sleeps is not None:
        manager.clock = sleeps
    if environ is not None:
        manager.environ = environ
    return manager


def openai_chat(content: str) -> dict[str, Any]:
    """An OpenAI `chat.completion` body answering `content`."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160},
    }


RECIPE_MARKERS = {
    "zarniwoop-research-refine": "First round of searches",
    "zarniwoop-research-plan": "Plan at most",
    "zarniwoop-research-evaluate": "You screen search results",
    "zarniwoop-research-rerank": "You rank search results",
    "zarniwoop-research-insights": "You summarise evidence",
}
"""How the scripted LLM tells the bundled recipes apart: a phrase of each one's system or user prompt
(refine before plan: the refine prompt also says "plan at most")."""


class ScriptedLlm:
    """An OpenAI-wire LLM on the emulator that answers each research recipe with a script.

    `answers[recipe]` is `(prompt, request body) -> dict | Reply`: a dict is sent as the JSON answer
    in a chat completion, a `Reply` as is (a 500, say). `calls[recipe]` logs each prompt and body.

        llm = ScriptedLlm(emulator, {"zarniwoop-research-plan": lambda prompt, body: {...}})
        settings = {**llm.settings(), ...}
    """

    def __init__(self, emulator: Emulator, answers: dict[str, Any], *, model: str = "gpt-4o-mini") -> None:
        self.emulator = emulator
        self.answers = answers
        self.model = model
        self.calls: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        emulator.add(OPENAI_PATH, self._route)

    def settings(self) -> dict[str, Any]:
        return {
            "ai.default.provider": "openai",
            "ai.default.model": self.model,
            "ai.provider.openai.baseUrl": f"{self.emulator.url}/v1",
            "ai.provider.openai.apiKey": "sk-test-scripted",
        }

    def _route(self, request: Any) -> Reply:
        import json

        body = request.json()
        text = "\n".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
        recipe = next((name for name, marker in RECIPE_MARKERS.items() if marker in text), "unknown")
        prompt = body["messages"][-1]["content"]
        self.calls.setdefault(recipe, []).append((prompt, body))
        answer = self.answers.get(recipe)
        if answer is None:
            return Reply.json({"error": {"message": f"no script for {recipe}"}}, status=400)
        out = answer(prompt, body)
        return out if isinstance(out, Reply) else Reply.json(openai_chat(json.dumps(out)))


@contextlib.asynccontextmanager
async def redis_token_budgets(redis_url: str, tenant: str) -> AsyncIterator[Any]:
    """The Redis budget store, whose keys of `tenant` are deleted on the way out (asserted or not)."""
    from zarniwoop.limits.budgets_redis import RedisBudgets

    ledger = RedisBudgets(redis_url)
    try:
        yield ledger
    finally:
        keys = [k async for k in ledger.redis.scan_iter(match=f"zarniwoop:llmq:{{{tenant}}}:*")]
        if keys:
            await ledger.redis.delete(*keys)
        await ledger.aclose()


def ask_as(account: str, *options: str) -> tuple[str, ...]:
    """The CLI's `llm ask hi` for `account`, then `options` (`--project`, `--model`, `--json`, …)."""
    return ("llm", "ask", "hi", "--account", account, *options)

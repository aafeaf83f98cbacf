"""Helpers for LLM-call tests: the seed's org tree against the emulator, fixture replies, a recorder
for backoff sleeps."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

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
    """A runtime with `tenants` and the credentials in `keys` (default: the seed's) stored."""
    path = write_config(directory, {"settings": settings or {}, "tenants": copy.deepcopy(tenants)})
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


class Sleeps:
    """An injectable `sleep` that records the waits instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def manager_for(runtime: Runtime, sleeps: Sleeps | None = None, environ: dict[str, str] | None = None):
    manager = await runtime.llm()
    if sleeps is not None:
        manager.sleep = sleeps
    if environ is not None:
        manager.environ = environ
    return manager

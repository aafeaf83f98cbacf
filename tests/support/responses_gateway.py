"""A gateway to test `/v1/responses` against (tests/surfaces/test_gateway_responses*.py): the gateway's
set-up (tests/support/gateway.py) with the scripted upstreams of `responses_upstream.py`, the OpenAI
instance serving `/v1/responses` natively, and projects for a Chat-Completions-bridged OpenAI instance
(`chatwire`) and for storage turned off (`nostore`); account `zaphod` and tenant `globex` (its own
`mike`, token by `other_tenant_token`) for isolation. In-process
(Starlette's test client): the fast tier's server.

    with responses_gateway(directory) as gw:
        gw.client().responses.create(model=MODELS["anthropic"], input="hi")
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .emulator import Emulator
from .gateway import LiveGateway, gateway_tenants, live_gateway, read_runtime
from .responses_upstream import ToolLoopUpstream

MODELS = {
    "responses": "openai:gpt-4o-mini",
    "anthropic": "anthropic:claude-sonnet-4-5",
    "gemini": "gemini:gemini-2.5-pro",
}
"""Native (an OpenAI-wire instance serving `/responses`), and the two bridged wires."""
WIRES = tuple(MODELS)
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Today's forecast for a city, in degrees Celsius",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": False,
}
SCHEMA = {
    "type": "json_schema",
    "name": "weather",
    "schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "temperature_c": {"type": "integer"}},
        "required": ["city", "temperature_c"],
        "additionalProperties": False,
    },
    "strict": True,
}


@dataclass
class Gateway(LiveGateway):
    upstream: ToolLoopUpstream

    def client(self, name: str = "main") -> Any:
        return self.openai(self.tokens[name])


def _tenants(emulator: Emulator) -> dict[str, Any]:
    tenants = gateway_tenants(emulator, zaphod={"teams": ["nlp"]})
    acme = tenants["acme"]
    acme["settings"]["ai.provider.openai.responsesApi"] = True  # the emulator serves /v1/responses
    acme["projects"]["chatwire"] = {"team": "nlp", "settings": {"ai.provider.openai.responsesApi": False}}
    acme["projects"]["nostore"] = {"team": "nlp", "settings": {"ai.responses.store": False}}
    tenants["globex"] = {"accounts": {"mike": {}}, "projects": {"review": {}}}
    return tenants


def other_tenant_token(gw: Gateway) -> str:
    """A user token of tenant globex bound to its account `mike` (acme's has the same name)."""

    async def create(runtime: Any) -> str:
        return str((await runtime.tokens.create("globex", "review", "user", account="mike")).token)

    return str(read_runtime(gw.setup.config, gw.setup.home, create))


def module_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    """The `/v1/responses` test modules' gateway, one per module:
    `gateway = pytest.fixture(scope="module", name="gateway")(module_gateway)`."""
    with responses_gateway(tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])) as gw:
        yield gw


@contextmanager
def responses_gateway(directory: Path) -> Iterator[Gateway]:
    tokens = {
        "zaphod": ("transformer-review", "zaphod"),
        "chatwire": ("chatwire", "mike"),
        "nostore": ("nostore", "mike"),
    }
    with live_gateway(directory, tenants=_tenants, tokens=tokens) as gw:
        yield Gateway(gw.emulator, gw.setup, gw.http, gw.url, gw.server, ToolLoopUpstream(gw.emulator))

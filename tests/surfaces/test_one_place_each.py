"""A new search provider and a new LLM vendor each come from one place (issue 42): an add-on
distribution holding one module and its entry point — a protocol object in `zarniwoop.protocols`, a
`WireType` record in `zarniwoop.llm_vendors` — and nothing of Zarniwoop edited. Installed the way pip
would install them, both show everywhere a built-in does: the fake keyless provider serves a search over
loopback HTTP and stands in the routing view, the settings forms and the console's provider list; the
fake OpenAI-compatible vendor, keyed by the operator variable its record declares, serves a gateway call,
is listed by `GET /v1/models`, the routing view and the console's model catalog, and is a provider type
the settings accept."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import yaml
from fastapi.testclient import TestClient

from zarniwoop.llm.adapters.wire import WIRE_TYPES
from zarniwoop.protocols import load_protocols
from zarniwoop.surfaces.http import create_app

from ..support.addons import install
from ..support.emulator import Emulator, Reply
from ..support.gateway import openai_completion
from ..support.media import media_items
from ..support.runtime import endpoint, only, write_config

PROVIDER = """
\"\"\"Fake Search: the suite's keyless loopback protocol (`{baseUrl}/web` answers `{"items": [...]}`).\"\"\"

from tests.support.media import MediaProtocol

PROTOCOL = MediaProtocol()
"""

VENDOR = '''
"""Fake AI: an OpenAI-compatible vendor, keyed by the operator's FAKEAI_API_KEY."""

from zarniwoop.llm.adapters.wire import WireType

VENDOR = WireType(
    "fakeai", "Fake AI", "{base_url}", key_required=True, env_keys=("FAKEAI_API_KEY",), speaks="openai"
)
'''

OPERATOR_KEY = "sk-fakeai-operator-0123456789"
CHAT = {"model": "fakeai:fake-chat", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def addons(tmp_path, monkeypatch, emulator: Emulator) -> Iterator[None]:
    site = tmp_path / "site"
    site.mkdir()
    install(site, "zw_fake_search", PROVIDER, "[zarniwoop.protocols]\nmediatest = zw_fake_search:PROTOCOL\n")
    module = VENDOR.replace("{base_url}", emulator.url + "/v1")
    install(site, "zw_fake_vendor", module, "[zarniwoop.llm_vendors]\nfakeai = zw_fake_vendor:VENDOR\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("FAKEAI_API_KEY", OPERATOR_KEY)
    load_protocols.cache_clear()
    WIRE_TYPES.reload()
    yield
    load_protocols.cache_clear()
    WIRE_TYPES.reload()
    for name in ("zw_fake_search", "zw_fake_vendor"):
        sys.modules.pop(name, None)


@dataclass
class Console:
    client: TestClient
    tokens: dict[str, str]

    def get(self, path: str, who: str = "admin", **params: str) -> object:
        answer = self.client.get(path, headers=self.auth(who), params=params)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}


@pytest.fixture
def console(tmp_path, emulator: Emulator, addons: None) -> Iterator[Console]:
    settings = {
        **only(),
        **endpoint("fake", "mediatest", emulator.url),
        "research.cache.ttlSeconds": 0,
        "ai.alias.default.fake": "fakeai:fake-chat",
    }
    tenants = {"acme": {"accounts": {"mike": {}}, "projects": {"review": {}}}}
    config = write_config(tmp_path, {"settings": settings, "tenants": tenants})
    # A model the operator describes by hand: a manual catalog document of the vendor's instance.
    document = tmp_path / "home" / "documents" / "_system" / "_tenant" / "model" / "fakeai" / "fake-chat.yaml"
    document.parent.mkdir(parents=True)
    document.write_text(yaml.safe_dump({"kind": "chat", "contextWindowTokens": 32000}))
    app = create_app(config=config, home=tmp_path / "home")
    with TestClient(app, raise_server_exceptions=False) as client:
        store = app.state.zarniwoop.runtime.tokens
        portal = client.portal
        assert portal is not None
        tokens = {
            "admin": portal.call(lambda: store.create("acme", "review", "admin")).token,
            "operator": portal.call(lambda: store.create("*", "*", "admin")).token,
            "mike": portal.call(lambda: store.create("acme", "review", "user", account="mike")).token,
        }
        yield Console(client, tokens)


def test_the_fake_provider_serves_searches_and_shows_in_routing_forms_and_the_console(console, emulator):
    emulator.add("/web", Reply.json(media_items("web", 1)))
    answer = console.client.post(
        "/v1/research/search", headers=console.auth("admin"), json={"query": "aurora", "modality": "web"}
    )
    result = answer.json()
    assert (result["providerInstanceId"], [h["title"] for h in result["hits"]]) == (
        "fake",
        ["web hit 1"],
    )
    assert [r.query for r in emulator.requests("/web")] == [{"q": ["aurora"], "n": ["10"]}]
    routing = console.get("/v1/_routing")
    assert [s["id"] for s in routing["searchCascades"]["WEB"]] == ["fake"]
    forms = {f["protocol"]: f for f in console.get("/v1/setting-forms")["forms"]}
    assert forms["mediatest"]["title"] == "Media (test)"
    assert "apiKey" not in [f["key"] for f in forms["mediatest"]["fields"]]  # keyless: no key field
    providers = {p["id"]: p for p in console.get("/v1/research/providers")["providers"]}
    assert (providers["fake"]["protocol"], providers["fake"]["displayName"]) == ("mediatest", "Media (test)")
    assert providers["fake"]["availability"] == "READY"


def test_the_fake_vendor_serves_the_gateway_and_shows_in_models_routing_and_the_catalog(console, emulator):
    emulator.add("/v1/chat/completions", openai_completion("hello from fake", 4, 2, model="fake-chat"))
    answer = console.client.post("/v1/chat/completions", headers=console.auth("mike"), json=CHAT)
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "hello from fake"
    sent = emulator.requests("/v1/chat/completions")
    assert [r.header("authorization") for r in sent] == [f"Bearer {OPERATOR_KEY}"]
    assert [r.json()["model"] for r in sent] == ["fake-chat"]
    listed = {m["id"]: m for m in console.get("/v1/models", "mike")["data"]}
    assert (listed["fakeai:fake-chat"]["instance"], listed["fakeai:fake-chat"]["credential_source"]) == (
        "fakeai",
        "operator",
    )
    assert listed["default:fake"]["target"] == "fakeai:fake-chat"
    catalog = console.get("/v1/ai-models")
    assert {"instance": "fakeai", "models": 1, "displayName": None} in catalog["instances"]
    routing = console.get("/v1/_routing")
    (fake,) = [a for a in routing["llm"]["aliases"] if a["alias"] == "default:fake"]
    assert (fake["target"], fake["providerType"], fake["instance"]) == (
        "fakeai:fake-chat",
        "fakeai",
        "fakeai",
    )


def test_the_settings_take_the_fake_vendor_as_a_provider_type(console):
    batch = {"level": "project", "set": {"ai.provider.fake-eu.type": "fakeai"}}
    written = console.client.put("/v1/settings", headers=console.auth("admin"), json=batch)
    assert written.status_code == 200, written.text
    wrong = {"level": "project", "set": {"ai.provider.fake-us.type": "fakeia"}}
    refused = console.client.put("/v1/settings", headers=console.auth("admin"), json=wrong)
    known = "openai, anthropic, gemini, ollama, ollama-cloud, lmstudio, fakeai"  # the registered vendor last
    message = f"ai.provider.fake-us.type: unknown provider type 'fakeia'; expected one of {known}"
    assert (refused.status_code, refused.json()) == (
        422,
        {"error": {"field": "ai.provider.fake-us.type", "message": message}},
    )

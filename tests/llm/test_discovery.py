"""Discovery (seed 002 §3a.6) against the loopback emulator serving the recorded listing bodies of
../shared/fixtures/llm: the right auto documents, per scope, and failures isolated per instance."""

from __future__ import annotations

import json

import pytest
import yaml

from zarniwoop import operations
from zarniwoop.contract import SearchScope
from zarniwoop.llm.catalog import FileDocumentStore
from zarniwoop.llm.catalog.discovery import write_auto_documents
from zarniwoop.llm.catalog.listing import ListedModel

from ..support.emulator import Reply
from ..support.llm import ALLOW_LOOPBACK
from ..support.paths import fixture_bytes
from ..support.runtime import open_runtime

pytestmark = pytest.mark.anyio

OPENAI_KEY = "sk-test-openai-0000"
GEMINI_KEY = "gm-test-key-1111"
CLOUD_KEY = "ollama-cloud-key-2222"
BAD_KEY = "sk-ant-wrong-3333"


def fixture_json(*parts: str):
    return json.loads(fixture_bytes("llm", *parts))


def requires(header: str, value: str, reply: Reply):
    def route(request):
        if request.header(header) != value:
            return Reply.json({"error": {"message": "bad key"}}, status=401)
        return reply

    return route


def serve_listings(emulator) -> None:
    openai_models = {"object": "list", "data": fixture_json("openai", "list-models-data.json")}
    emulator.add(
        "/openai/v1/models", requires("authorization", f"Bearer {OPENAI_KEY}", Reply.json(openai_models))
    )
    gemini_page_1 = fixture_bytes("llm", "gemini", "list-models.json")
    token = fixture_json("gemini", "list-models.json")["nextPageToken"]
    gemini_page_2 = {
        "models": [
            {
                "name": "models/gemini-page-two",
                "displayName": "Page Two",
                "inputTokenLimit": 4096,
                "outputTokenLimit": 1024,
                "supportedGenerationMethods": ["generateContent"],
            }
        ]
    }

    def gemini(request):
        if request.header("x-goog-api-key") != GEMINI_KEY:
            return Reply.json({"error": {"code": 403}}, status=403)
        return Reply.json(gemini_page_2) if request.param("pageToken") == token else Reply.json(gemini_page_1)

    emulator.add("/gemini/v1beta/models", gemini)
    emulator.add("/ollama/api/tags", Reply(body=fixture_bytes("llm", "ollama", "api-tags.json")))
    emulator.add(
        "/lmstudio/api/v1/models", Reply(body=fixture_bytes("llm", "lmstudio", "api-v1-models.json"))
    )
    emulator.add("/lm-old/api/v0/models", Reply(body=fixture_bytes("llm", "lmstudio", "api-v0-models.json")))
    emulator.add(
        "/anthropic/v1/models",
        Reply(status=401, body=fixture_bytes("llm", "errors", "anthropic-401-invalid-api-key.json")),
    )
    emulator.add("/hang/api/tags", Reply(hang=True))
    emulator.add(
        "/cerebras/v1/models", Reply(body=fixture_bytes("llm", "gateways", "cerebras-list-models.json"))
    )
    openrouter = {
        "data": fixture_json("openrouter", "list-models-data-2024-03.json")
        + fixture_json("openrouter", "list-models-data-2024-09.json")
    }
    emulator.add("/openrouter/api/v1/models", Reply.json(openrouter))
    emulator.add(
        "/ocloud/api/tags",
        requires(
            "authorization",
            f"Bearer {CLOUD_KEY}",
            Reply(body=fixture_bytes("llm", "ollama", "api-tags.json")),
        ),
    )


def provider(
    instance: str, base_url: str | None = None, key: str | None = None, type_: str | None = None
) -> dict:
    out = {}
    if type_:
        out[f"ai.provider.{instance}.type"] = type_
    if base_url:
        out[f"ai.provider.{instance}.baseUrl"] = base_url
    if key:
        out[f"ai.provider.{instance}.apiKey"] = key
    return out


def config(emulator):
    url = emulator.url
    system = {
        **ALLOW_LOOPBACK,  # the tenants' instances list from the loopback emulator too
        # every instance's answer within it, however busy the machine; the hang waits it out once
        "ai.discovery.timeoutMs": 5000,
        **provider("openai", f"{url}/openai/v1", OPENAI_KEY),
        **provider("gemini", f"{url}/gemini", GEMINI_KEY),
        **provider("ollama", f"{url}/ollama"),
        **provider("lmstudio", f"{url}/lmstudio/v1"),  # the OpenAI-style URL is accepted
        **provider("anthropic", f"{url}/anthropic", BAD_KEY),
        **provider("slowpoke", f"{url}/hang", type_="ollama"),
        **provider("cerebras", f"{url}/cerebras/v1", "csk-test", type_="openai"),
        **provider("openrouter", f"{url}/openrouter/api/v1", "or-test", type_="openai"),
        **provider("nokey", type_="anthropic"),
    }
    tenants = {
        "acme": {
            "settings": provider("ollama-cloud", f"{url}/ocloud", CLOUD_KEY),
            "projects": {"review": {"settings": provider("lmstudio", f"{url}/lm-old")}},
        }
    }
    return system, tenants


def auto_doc(rt, tenant, project, relative):
    text = (rt.home / "documents" / tenant / project / "model-auto" / relative).read_text()
    assert text.startswith("# Written by zarniwoop model discovery")
    fields = yaml.safe_load(text)
    assert fields.pop("discoveredBy") == "discovery-job"
    assert fields.pop("discoveredAt").endswith("Z")
    return fields


def auto_files(rt, tenant, project, instance):
    base = rt.home / "documents" / tenant / project / "model-auto" / instance
    return sorted(p.relative_to(base).as_posix() for p in base.rglob("*.yaml")) if base.exists() else []


async def test_discovery_writes_the_right_documents_and_isolates_failing_instances(tmp_path, emulator):
    serve_listings(emulator)
    system, tenants = config(emulator)
    async with await open_runtime(tmp_path, system, tenants=tenants) as rt:
        # Boot validation refuses an unknown type; a row that got into the database anyway (an older
        # version, a direct write) must still only take down its own instance.
        for key, value in provider("mystery", f"{emulator.url}/mystery", type_="grpc").items():
            await rt.settings.set("_system", "_tenant", key, value)
        report = await operations.discover_models(rt, None)

        assert [(s["tenant"], s["project"]) for s in report["scopes"]] == [
            ("_system", "_tenant"),
            ("acme", "_tenant"),
            ("acme", "review"),
        ]
        system_scope, tenant_scope, project_scope = report["scopes"]
        assert {
            r["instance"]: (r["providerType"], r["models"], r["written"], r["removed"])
            for r in system_scope["instances"]
        } == {
            "openai": ("openai", 28, 28, 0),
            "gemini": ("gemini", 51, 51, 0),  # 50 on the recorded page + 1 on the next page
            "ollama": ("ollama", 2, 2, 0),
            "lmstudio": ("lmstudio", 3, 3, 0),
            "cerebras": ("openai", 3, 3, 0),
            "openrouter": ("openai", 7, 7, 0),
        }
        assert sorted(system_scope["skippedInstances"], key=lambda s: s["instance"]) == [
            {
                "instance": "anthropic",
                "providerType": "anthropic",
                "error": "HTTP 401 (key missing, wrong or not allowed)",
            },
            {
                "instance": "mystery",
                "providerType": "grpc",
                "error": "unknown provider type 'grpc' (ai.provider.mystery.type); expected one of "
                "openai, anthropic, gemini, ollama, ollama-cloud, lmstudio",
            },
            {
                "instance": "nokey",
                "providerType": "anthropic",
                "error": "no API key (ai.provider.nokey.apiKey)",
            },
            {"instance": "slowpoke", "providerType": "ollama", "error": "no answer within 5s"},
        ]
        # the hang cost its 5 s timeout, as its entry says (no stopwatch: a busy machine stretches one)
        assert [(r["instance"], r["models"]) for r in tenant_scope["instances"]] == [("ollama-cloud", 2)]
        assert [(r["instance"], r["models"]) for r in project_scope["instances"]] == [("lmstudio", 3)]
        assert tenant_scope["skippedInstances"] == project_scope["skippedInstances"] == []
        text = json.dumps(report)
        for secret in (OPENAI_KEY, GEMINI_KEY, CLOUD_KEY, BAD_KEY):
            assert secret not in text

        # The documents: only what each listing says, slugs per §3a.6.
        assert auto_doc(rt, "_system", "_tenant", "gemini/gemini-2.5-flash.yaml") == {
            "contextWindowTokens": 1048576,
            "defaultMaxOutputTokens": 65536,
            "kind": "chat",
            "displayName": "Gemini 2.5 Flash",
        }
        assert auto_doc(rt, "_system", "_tenant", "gemini/gemini-embedding-001.yaml") == {
            "contextWindowTokens": 2048,
            "kind": "embedding",
            "displayName": "Gemini Embedding 001",
        }
        assert auto_doc(rt, "_system", "_tenant", "gemini/imagen-4.0-generate-001.yaml")["kind"] == "image"
        assert (
            auto_doc(rt, "_system", "_tenant", "gemini/gemini-page-two.yaml")["contextWindowTokens"] == 4096
        )
        assert auto_doc(rt, "_system", "_tenant", "openai/gpt-4.yaml") == {"kind": "chat"}
        assert auto_doc(rt, "_system", "_tenant", "openai/text-embedding-3-large.yaml") == {
            "kind": "embedding"
        }
        assert auto_doc(rt, "_system", "_tenant", "openai/dall-e-3.yaml") == {"kind": "image"}
        assert auto_files(rt, "_system", "_tenant", "ollama") == [
            "deepseek-r1-latest.yaml",
            "llama3.2-latest.yaml",
        ]
        assert auto_doc(rt, "_system", "_tenant", "ollama/deepseek-r1-latest.yaml") == {
            "wireName": "deepseek-r1:latest",
            "kind": "chat",
        }
        assert auto_files(rt, "_system", "_tenant", "lmstudio") == [
            "deepseek-r1.yaml",
            "google/gemma-4-26b-a4b.yaml",
            "text-embedding-nomic-embed-text-v1.5-embedding.yaml",
        ]
        assert auto_doc(rt, "_system", "_tenant", "lmstudio/google/gemma-4-26b-a4b.yaml") == {
            "contextWindowTokens": 262144,
            "kind": "chat",
            "displayName": "Gemma 4 26B A4B",
        }
        assert (
            auto_doc(
                rt, "_system", "_tenant", "lmstudio/text-embedding-nomic-embed-text-v1.5-embedding.yaml"
            )["kind"]
            == "embedding"
        )
        assert auto_files(rt, "_system", "_tenant", "cerebras") == [
            "gemma-4-31b.yaml",
            "gpt-oss-120b.yaml",
            "zai-glm-4.7.yaml",
        ]
        assert auto_doc(rt, "_system", "_tenant", "openrouter/mattshumer/reflection-70b-free.yaml") == {
            "wireName": "mattshumer/reflection-70b:free",
            "contextWindowTokens": 131072,
            "defaultMaxOutputTokens": 4096,
            "kind": "chat",
            "displayName": "Reflection 70B (free)",
        }
        assert auto_doc(rt, "_system", "_tenant", "openrouter/openai/gpt-3.5-turbo.yaml") == {
            "contextWindowTokens": 16385,
            "defaultMaxOutputTokens": 4096,
            "kind": "chat",
            "displayName": "OpenAI: GPT-3.5 Turbo",
        }
        assert auto_files(rt, "_system", "_tenant", "anthropic") == []
        assert auto_files(rt, "_system", "_tenant", "slowpoke") == []

        # Scope symmetry: each scope's settings produce documents in that scope only.
        assert auto_files(rt, "acme", "_tenant", "ollama-cloud") == [
            "deepseek-r1-latest.yaml",
            "llama3.2-latest.yaml",
        ]
        assert auto_files(rt, "_system", "_tenant", "ollama-cloud") == []
        assert auto_files(rt, "acme", "review", "lmstudio") == [
            "meta-llama-3.1-8b-instruct.yaml",
            "qwen2-vl-7b-instruct.yaml",
            "text-embedding-nomic-embed-text-v1.5.yaml",
        ]
        assert auto_doc(rt, "acme", "review", "lmstudio/qwen2-vl-7b-instruct.yaml") == {
            "contextWindowTokens": 32768,
            "kind": "chat",
        }
        assert auto_files(rt, "acme", "_tenant", "lmstudio") == []

        # The wire: keys in headers (never in the URL), pagination followed, LM Studio variants tried.
        gemini_calls = emulator.requests("/gemini/v1beta/models")
        assert [c.param("pageToken") for c in gemini_calls] == [
            None,
            fixture_json("gemini", "list-models.json")["nextPageToken"],
        ]
        assert all(c.param("key") is None and c.header("x-goog-api-key") == GEMINI_KEY for c in gemini_calls)
        anthropic_call = emulator.requests("/anthropic/v1/models")[0]
        assert (anthropic_call.header("x-api-key"), anthropic_call.header("anthropic-version")) == (
            BAD_KEY,
            "2023-06-01",
        )
        assert len(emulator.requests("/lm-old/api/v1/models")) == 1  # 404 → next variant
        assert emulator.requests("/ollama/api/tags")[0].header("authorization") is None

        # The catalog was refreshed: auto data merged under the bundled prices, quirks applied.
        catalog = await rt.catalog()
        flash = catalog.lookup("gemini", "gemini-2.5-flash", SearchScope("acme", "review"))
        assert (flash.context_window_tokens, flash.pricing.input_per_mtok, flash.pricing.output_per_mtok) == (
            1048576,
            0.3,
            2.5,
        )
        assert flash.layers == ("bundled", "_system/_tenant auto", "_system/_tenant manual")
        r1 = catalog.lookup("ollama", "deepseek-r1:latest", SearchScope("acme", "review"))
        assert (r1.strip_think_tags, r1.parser, r1.pricing) == (
            True,
            None,
            None,
        )  # unpriced until an operator prices it
        gemma = catalog.lookup("lmstudio", "google/gemma-4-26b-a4b")
        assert (gemma.parser, gemma.context_window_tokens) == ("gemma4", 262144)
        assert catalog.lookup("ollama-cloud", "llama3.2:latest", SearchScope("acme", "review")) is not None
        assert catalog.lookup("ollama-cloud", "llama3.2:latest", SearchScope("globex", "review")) is None
        assert report["refresh"]["skipped"] == []


async def test_rediscovery_rewrites_auto_documents_removes_vanished_models_and_never_touches_manual_ones(
    tmp_path, emulator
):
    emulator.add("/ollama/api/tags", Reply(body=fixture_bytes("llm", "ollama", "api-tags.json")))
    async with await open_runtime(tmp_path, provider("ollama", f"{emulator.url}/ollama")) as rt:
        manual = rt.home / "documents/_system/_tenant/model/ollama/deepseek-r1-latest.yaml"
        manual.parent.mkdir(parents=True)
        manual.write_text(
            'wireName: "deepseek-r1:latest"\nsize: SMALL\npricing: {inputPerMTok: 0, outputPerMTok: 0}\n'
        )
        first = await operations.discover_models(rt, SearchScope("_system", "_tenant"))
        assert first["scopes"][0]["instances"][0]["written"] == 2

        only_llama = {
            "models": [
                m for m in fixture_json("ollama", "api-tags.json")["models"] if m["name"].startswith("llama")
            ]
        }
        emulator.add("/ollama/api/tags", Reply.json(only_llama))
        second = await operations.discover_models(rt, SearchScope("_system", "_tenant"))
        assert second["scopes"][0]["instances"][0] | {"durationMs": 0} == {
            "instance": "ollama",
            "providerType": "ollama",
            "models": 1,
            "written": 1,
            "removed": 1,
            "durationMs": 0,
        }
        assert auto_files(rt, "_system", "_tenant", "ollama") == ["llama3.2-latest.yaml"]
        assert manual.read_text().startswith('wireName: "deepseek-r1:latest"')
        catalog = await rt.catalog()
        kept = catalog.lookup("ollama", "deepseek-r1:latest")
        assert (kept.size.value, kept.layers) == ("SMALL", ("_system/_tenant manual",))


async def test_a_scope_without_provider_settings_discovers_nothing(tmp_path, emulator):
    async with await open_runtime(tmp_path, provider("ollama", f"{emulator.url}/ollama")) as rt:
        report = await operations.discover_models(rt, SearchScope("acme", "review"))
    assert report["scopes"] == [
        {"tenant": "acme", "project": "review", "instances": [], "skippedInstances": []}
    ]
    assert emulator.requests() == []


async def test_a_scope_discovers_the_instances_it_reads_from_above_into_their_own_scope(tmp_path, emulator):
    """Issue 46: the console's Discover (`inherited`) for a scope that defines no instance said
    "0 models listed by 0 instances" while the operator's instance served its calls. Each instance
    is listed into the scope that defines it (scope symmetry); the asking scope's own row is there."""
    emulator.add("/ollama/api/tags", Reply(body=fixture_bytes("llm", "ollama", "api-tags.json")))
    async with await open_runtime(tmp_path, provider("ollama", f"{emulator.url}/ollama")) as rt:
        report = await operations.discover_models(rt, SearchScope("acme", "review"), inherited=True)
        assert (rt.home / "documents/_system/_tenant/model-auto/ollama").is_dir()
        assert not (rt.home / "documents/acme").exists()
    assert [
        (s["tenant"], s["project"], [i["instance"] for i in s["instances"]]) for s in report["scopes"]
    ] == [
        ("_system", "_tenant", ["ollama"]),
        ("acme", "review", []),
    ]
    assert report["models"] == 2
    assert len(emulator.requests("/ollama/api/tags")) == 1


async def test_anthropic_listing_follows_has_more_pages(tmp_path, emulator):
    """No recorded Anthropic listing exists (WIRE_NOTES gap): synthetic pages in the documented shape."""
    pages = {
        None: {
            "data": [{"type": "model", "id": "claude-opus-4-7", "display_name": "Claude Opus 4.7"}],
            "has_more": True,
            "first_id": "claude-opus-4-7",
            "last_id": "claude-opus-4-7",
        },
        "claude-opus-4-7": {
            "data": [{"type": "model", "id": "claude-haiku-4-5", "display_name": "Claude Haiku 4.5"}],
            "has_more": False,
            "first_id": "claude-haiku-4-5",
            "last_id": "claude-haiku-4-5",
        },
    }
    emulator.add("/anthropic/v1/models", lambda request: Reply.json(pages[request.param("after_id")]))
    settings = provider("anthropic", f"{emulator.url}/anthropic", "sk-ant-test")
    async with await open_runtime(tmp_path, settings) as rt:
        report = await operations.discover_models(rt, None)
        assert report["scopes"][0]["instances"][0]["models"] == 2
        assert auto_files(rt, "_system", "_tenant", "anthropic") == [
            "claude-haiku-4-5.yaml",
            "claude-opus-4-7.yaml",
        ]
        assert auto_doc(rt, "_system", "_tenant", "anthropic/claude-opus-4-7.yaml") == {
            "kind": "chat",
            "displayName": "Claude Opus 4.7",
        }
        doc = (await rt.catalog()).lookup("anthropic", "claude-opus-4-7")
        assert (doc.display_name, doc.pricing.input_per_mtok, doc.context_window_tokens) == (
            "Claude Opus 4.7",
            5.0,
            1000000,
        )
    assert [r.param("limit") for r in emulator.requests("/anthropic/v1/models")] == ["1000", "1000"]


async def test_a_malformed_listing_skips_only_that_instance(tmp_path, emulator):
    emulator.add("/bad/api/tags", Reply(body=b"<html>gateway error</html>"))
    emulator.add("/good/api/tags", Reply(body=fixture_bytes("llm", "ollama", "api-tags.json")))
    settings = {
        **provider("ollama", f"{emulator.url}/bad"),
        **provider("gpu2", f"{emulator.url}/good", type_="ollama"),
    }
    async with await open_runtime(tmp_path, settings) as rt:
        report = await operations.discover_models(rt, None)
    scope = report["scopes"][0]
    assert [(r["instance"], r["models"]) for r in scope["instances"]] == [("gpu2", 2)]
    assert scope["skippedInstances"][0]["instance"] == "ollama"
    assert scope["skippedInstances"][0]["error"].startswith("ollama model listing is not JSON")


async def test_two_wire_names_with_one_slug_stay_apart(tmp_path):
    store = FileDocumentStore(tmp_path)
    models = [ListedModel("qwen3:30b"), ListedModel("qwen3-30b"), ListedModel("qwen3:30b")]
    written, removed = await write_auto_documents(
        store, "_system", "_tenant", "ollama", models, "2026-01-01T00:00:00Z"
    )
    assert (written, removed) == (2, 0)
    paths = await store.list_paths("_system", "_tenant", "model-auto/ollama/")
    assert len(paths) == 2 and "model-auto/ollama/qwen3-30b.yaml" in paths
    other = next(p for p in paths if p != "model-auto/ollama/qwen3-30b.yaml")
    assert yaml.safe_load(await store.read("_system", "_tenant", other))["wireName"] == "qwen3-30b"
    assert (
        yaml.safe_load(await store.read("_system", "_tenant", "model-auto/ollama/qwen3-30b.yaml"))["wireName"]
        == "qwen3:30b"
    )

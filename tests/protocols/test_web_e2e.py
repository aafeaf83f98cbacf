"""`zarniwoop search … --json` end to end against the emulated web providers.

Real CLI (Typer's runner on the app), real runtime (YAML config, SQLite under ZARNIWOOP_HOME in
tmp), real HTTP on loopback: every protocol × modality pair returns the served body's hits; a keyed
provider without a key is `skipped_no_key`; a wrong key is a `hard_error` with a 30-minute cooldown
that `zarniwoop providers --json` shows.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app

from ..support.emulator import Emulator, Reply
from ..support.paths import fixture_bytes
from ..support.providers_web import (
    KEYS,
    mount_brave,
    mount_exa,
    mount_searxng,
    mount_serper,
    mount_tavily,
    synthetic_bytes,
)
from ..support.runtime import endpoint, only, write_config

KEYED = ("serper", "brave", "exa", "tavily")
BUILTIN_OFF = only()  # every built-in endpoint disabled; each test enables the one it exercises


@dataclass(frozen=True)
class Case:
    protocol: str
    modality: str
    path: str
    """Emulator path the request must reach (prefix + the provider's own path)."""
    count: int
    first_title: str
    first_url: str


CASES = [
    Case(
        "serper",
        "web",
        "/serper/search",
        10,
        "2022 FIFA World Cup final - Wikipedia",
        "https://en.wikipedia.org/wiki/2022_FIFA_World_Cup_final",
    ),
    Case(
        "serper",
        "pdf",
        "/serper/search",
        10,
        "2022 FIFA World Cup final - Wikipedia",
        "https://en.wikipedia.org/wiki/2022_FIFA_World_Cup_final",
    ),
    Case(
        "serper",
        "news",
        "/serper/news",
        10,
        "Apple Plots Expansion Into AI Robots, Home Security and Smart Displays",
        "https://finance.yahoo.com/news/apple-plots-expansion-ai-robots-182112041.html",
    ),
    Case(
        "serper",
        "image",
        "/serper/images",
        2,
        "Aurora borealis over Tromsø",
        "https://photos.example.org/aurora-tromso",
    ),
    Case(
        "serper",
        "video",
        "/serper/videos",
        2,
        "Semantic Kernel in 10 minutes",
        "https://www.youtube.com/watch?v=abc123XYZ00",
    ),
    Case(
        "serper",
        "academic",
        "/serper/scholar",
        2,
        "Attention is all you need",
        "https://proceedings.neurips.cc/paper/2017/hash/3f5ee243547dee91fbd053c1c4a845aa-Abstract.html",
    ),
    Case(
        "brave",
        "web",
        "/brave/res/v1/web/search",
        10,
        "Introduction to Semantic Kernel | Microsoft Learn",
        "https://learn.microsoft.com/en-us/semantic-kernel/overview/",
    ),
    Case(
        "brave",
        "image",
        "/brave/res/v1/images/search",
        2,
        "Aurora borealis over Tromsø",
        "https://photos.example.org/aurora-tromso",
    ),
    Case(
        "brave",
        "video",
        "/brave/res/v1/videos/search",
        2,
        "Semantic Kernel in 10 minutes",
        "https://www.youtube.com/watch?v=abc123XYZ00",
    ),
    Case(
        "brave",
        "news",
        "/brave/res/v1/news/search",
        2,
        "Apple plans new home devices",
        "https://www.reuters.example.com/technology/apple-devices-2025",
    ),
    Case(
        "exa",
        "web",
        "/exa/search",
        10,
        "AI agents arrived in 2025 – here's what happened and the ...",
        "https://theconversation.com/ai-agents-arrived-in-2025-heres-what-happened-and-the-challenges-ahead-in-2026-272325",
    ),
    Case(
        "exa",
        "academic",
        "/exa/search",
        10,
        "AI agents arrived in 2025 – here's what happened and the ...",
        "https://theconversation.com/ai-agents-arrived-in-2025-heres-what-happened-and-the-challenges-ahead-in-2026-272325",
    ),
    Case(
        "exa",
        "news",
        "/exa/search",
        10,
        "What are Autonomous AI Agents? A Complete Guide 2025",
        "https://kodexolabs.com/what-are-autonomous-ai-agents/",
    ),
    Case(
        "exa",
        "pdf",
        "/exa/search",
        10,
        "What are Autonomous AI Agents? A Complete Guide 2025",
        "https://kodexolabs.com/what-are-autonomous-ai-agents/",
    ),
    Case(
        "tavily",
        "web",
        "/tavily/search",
        4,
        "Semantic Kernel overview for .NET - .NET | Microsoft Learn",
        "https://learn.microsoft.com/en-us/dotnet/ai/semantic-kernel-dotnet-overview",
    ),
    Case(
        "tavily",
        "news",
        "/tavily/search",
        4,
        "Semantic Kernel overview for .NET - .NET | Microsoft Learn",
        "https://learn.microsoft.com/en-us/dotnet/ai/semantic-kernel-dotnet-overview",
    ),
    Case(
        "searxng",
        "web",
        "/searxng/search",
        30,
        "Stephen Hawking has died",
        "http://www.bbc.com/news/uk-43396008",
    ),
    Case(
        "searxng",
        "news",
        "/searxng/search",
        20,
        "$4.8T Budget with Big Safety-Net Cuts",
        "https://www.wsj.com/articles/trump-to-propose-4-8-trillion-budget-with-big-safety-net-cuts-11581274525",
    ),
    Case(
        "searxng",
        "image",
        "/searxng/search",
        2,
        "Aurora borealis over Tromsø",
        "https://photos.example.org/aurora-tromso",
    ),
    Case(
        "searxng",
        "video",
        "/searxng/search",
        2,
        "Semantic Kernel in 10 minutes",
        "https://www.youtube.com/watch?v=abc123XYZ00",
    ),
    Case(
        "searxng",
        "academic",
        "/searxng/search",
        2,
        "Attention Is All You Need",
        "https://arxiv.org/abs/1706.03762",
    ),
]


def mount_all(emulator: Emulator) -> dict[str, str]:
    """Every web provider on the emulator, serving recorded bodies where they exist, synthetic ones elsewhere."""
    return {
        "serper": mount_serper(
            emulator,
            {
                "/search": fixture_bytes(
                    "serper", "search-single-object-world-cup-answerbox-knowledgegraph.json"
                ),
                "/news": fixture_bytes("serper", "news-apple-inc-playground-2025.json"),
                "/images": synthetic_bytes("serper", "images-synthetic.json"),
                "/videos": synthetic_bytes("serper", "videos-synthetic.json"),
                "/scholar": synthetic_bytes("serper", "scholar-synthetic.json"),
            },
        ),
        "brave": mount_brave(
            emulator,
            {
                "/res/v1/web/search": fixture_bytes("brave", "web-search-what-is-semantic-kernel.json"),
                "/res/v1/images/search": synthetic_bytes("brave", "images-synthetic.json"),
                "/res/v1/videos/search": synthetic_bytes("brave", "videos-synthetic.json"),
                "/res/v1/news/search": synthetic_bytes("brave", "news-synthetic.json"),
            },
        ),
        "exa": mount_exa(
            emulator,
            {
                "": fixture_bytes("exa", "search-auto-text-ai-agents-2025.json"),
                "research paper": fixture_bytes("exa", "search-auto-text-ai-agents-2025.json"),
                "news": fixture_bytes("exa", "search-auto-include-domains-learning-capabilities.json"),
                "pdf": fixture_bytes("exa", "search-auto-include-domains-learning-capabilities.json"),
            },
        ),
        "tavily": mount_tavily(
            emulator,
            {"general": fixture_bytes("tavily", "search-with-answer-and-images-semantic-kernel.json")},
        ),
        "searxng": mount_searxng(
            emulator,
            {
                "general": fixture_bytes("searxng", "search-json-two-engines-hn-exa.json"),
                "news": fixture_bytes("searxng", "search-json-pageno2-exa-not-paging.json"),
                "images": synthetic_bytes("searxng", "images-synthetic.json"),
                "videos": synthetic_bytes("searxng", "videos-synthetic.json"),
                "science": synthetic_bytes("searxng", "science-synthetic.json"),
            },
        ),
    }


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("ZARNIWOOP_HOME", str(path))
    return path


def settings_for(protocol: str, base_url: str, **extra: Any) -> dict[str, Any]:
    """Only `protocol`'s endpoint enabled (instance id = protocol id), pointed at the emulator."""
    return {**BUILTIN_OFF, **endpoint(protocol, protocol, base_url, enabled=True, **extra)}


def cli(tmp_path: Path, settings: dict[str, Any], *args: str) -> tuple[int, Any, str]:
    config = write_config(tmp_path, {"settings": settings})
    result = CliRunner().invoke(app, ["--config", str(config), *args])
    output = result.stdout.strip()
    data = json.loads(output) if output.startswith("{") else output
    return result.exit_code, data, result.stderr


def tried(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (a["providerInstanceId"], a["outcome"])
        for a in result["attempts"]
        if a["outcome"] != "skipped_disabled"
    ]


def last_error(result: dict[str, Any]) -> str:
    """The error message of the one attempt that was not a disabled built-in."""
    [attempt] = [a for a in result["attempts"] if a["outcome"] != "skipped_disabled"]
    return attempt["errorMessage"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.protocol}-{c.modality}")
def test_search_returns_the_served_hits(case: Case, tmp_path: Path, home: Path, emulator: Emulator) -> None:
    bases = mount_all(emulator)
    key = {"apiKey": KEYS[case.protocol]} if case.protocol in KEYED else {}
    code, result, stderr = cli(
        tmp_path,
        settings_for(case.protocol, bases[case.protocol], **key),
        "search",
        "semantic kernel",
        "-m",
        case.modality,
        "-n",
        "50",
        "--json",
    )
    assert code == 0, stderr
    assert result["providerInstanceId"] == case.protocol
    assert result["modality"] == case.modality.upper()
    assert tried(result) == [(case.protocol, "success")]
    assert result["returnedCount"] == case.count == len(result["hits"])
    first = result["hits"][0]
    assert (first["title"], first["url"]) == (case.first_title, case.first_url)
    assert {h["source"] for h in result["hits"]} == {case.protocol}
    assert {h["modality"] for h in result["hits"]} == {case.modality.upper()}
    [request] = emulator.requests(case.path)
    assert request.method == ("GET" if case.protocol in ("brave", "searxng") else "POST")
    assert home.joinpath("zarniwoop.db").exists()  # the runtime lived under ZARNIWOOP_HOME


def test_requests_carry_the_provider_specific_shape(
    tmp_path: Path, home: Path, emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    bases = mount_all(emulator)
    for protocol, modality in (
        ("serper", "pdf"),
        ("exa", "academic"),
        ("tavily", "news"),
        ("searxng", "video"),
        ("brave", "news"),
    ):
        key = {"apiKey": KEYS[protocol]} if protocol in KEYED else {}
        # A home each: endpoints an earlier run defined stay defined (and keep their cascade place).
        monkeypatch.setenv("ZARNIWOOP_HOME", str(home / protocol))
        code, _, stderr = cli(
            tmp_path,
            settings_for(protocol, bases[protocol], **key),
            "search",
            "agents",
            "-m",
            modality,
            "--json",
        )
        assert code == 0, stderr
    [serper] = emulator.requests("/serper/search")
    assert serper.header("x-api-key") == KEYS["serper"]
    assert serper.json() == {"q": "agents filetype:pdf", "num": 10}
    [exa] = emulator.requests("/exa/search")
    assert exa.header("x-api-key") == KEYS["exa"] and exa.json()["category"] == "research paper"
    [tavily] = emulator.requests("/tavily/search")
    assert tavily.header("authorization") == f"Bearer {KEYS['tavily']}" and tavily.json()["topic"] == "news"
    [searxng] = emulator.requests("/searxng/search")
    assert (searxng.param("format"), searxng.param("categories"), searxng.param("q")) == (
        "json",
        "videos",
        "agents",
    )
    [brave] = emulator.requests("/brave/res/v1/news/search")
    assert brave.header("x-subscription-token") == KEYS["brave"] and brave.param("count") == "10"


def test_expert_params_reach_the_wire_and_unsupported_ones_are_noted(
    tmp_path: Path, home: Path, emulator: Emulator
) -> None:
    bases = mount_all(emulator)
    code, result, stderr = cli(
        tmp_path,
        settings_for("tavily", bases["tavily"], apiKey=KEYS["tavily"]),
        "search",
        "semantic kernel",
        "-m",
        "web",
        "--tier",
        "expert",
        "--site",
        "learn.microsoft.com",
        "--date-from",
        "2025-01-01",
        "--filetype",
        "pdf",
        "--language",
        "de",
        "--json",
    )
    assert code == 0, stderr
    assert result["note"] == "ignored by this provider: filetype, language"
    [request] = emulator.requests("/tavily/search")
    body = request.json()
    assert body["include_domains"] == ["learn.microsoft.com"] and body["start_date"] == "2025-01-01"


def test_cli_domain_is_a_subject_hint_never_a_site_filter(
    tmp_path: Path, home: Path, emulator: Emulator
) -> None:
    """`--domain sports` is the tool schema's subject hint: Serper's query never gets `site:sports`."""
    bases = mount_all(emulator)
    settings = settings_for("serper", bases["serper"], apiKey=KEYS["serper"])
    args = ("search", "football results", "-m", "web", "--tier", "expert", "--domain", "sports", "--json")
    code, result, stderr = cli(tmp_path, settings, *args)
    assert code == 0, stderr
    assert result["note"] == "ignored by this provider: domain"
    [request] = emulator.requests("/serper/search")
    assert request.json() == {"q": "football results", "num": 10}


def test_brave_rate_limit_headers_are_passed_on(tmp_path: Path, home: Path, emulator: Emulator) -> None:
    bases = mount_all(emulator)
    code, result, _ = cli(
        tmp_path,
        settings_for("brave", bases["brave"], apiKey=KEYS["brave"]),
        "search",
        "semantic kernel",
        "--json",
    )
    assert code == 0
    assert result["upstreamHeaders"]["x-ratelimit-limit"] == "1, 15000"
    assert result["upstreamHeaders"]["x-ratelimit-remaining"] == "1, 14000"


@pytest.mark.parametrize("protocol", KEYED)
def test_keyed_provider_without_a_key_is_skipped(
    protocol: str, tmp_path: Path, home: Path, emulator: Emulator
) -> None:
    bases = mount_all(emulator)
    code, result, _ = cli(
        tmp_path, settings_for(protocol, bases[protocol]), "search", "semantic kernel", "--json"
    )
    assert tried(result) == [(protocol, "skipped_no_key")]
    assert result["hits"] == [] and code == 3
    assert emulator.requests() == []  # a skip costs no request


def test_operator_environment_key_is_used(
    tmp_path: Path, home: Path, emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    bases = mount_all(emulator)
    monkeypatch.setenv("SERPER_API_KEY", KEYS["serper"])
    code, result, stderr = cli(
        tmp_path, settings_for("serper", bases["serper"]), "search", "world cup", "--json"
    )
    assert code == 0, stderr
    assert tried(result) == [("serper", "success")]
    assert emulator.requests("/serper/search")[0].header("x-api-key") == KEYS["serper"]


@pytest.mark.parametrize("protocol", KEYED)
def test_wrong_key_is_a_hard_error_with_a_30_minute_cooldown(
    protocol: str, tmp_path: Path, home: Path, emulator: Emulator
) -> None:
    bases = mount_all(emulator)
    settings = settings_for(protocol, bases[protocol], apiKey="not-the-right-key")
    before = time.time()
    code, result, _ = cli(tmp_path, settings, "search", "semantic kernel", "--json")
    assert code == 3
    assert tried(result) == [(protocol, "hard_error")]
    [attempt] = [a for a in result["attempts"] if a["outcome"] == "hard_error"]
    assert attempt["errorMessage"].startswith("HTTP 401 (")
    assert "not-the-right-key" not in json.dumps(result)  # the key never shows
    assert len(emulator.requests()) == 1

    code, listing, stderr = cli(tmp_path, settings, "providers", "--json")
    assert code == 0, stderr
    [entry] = [p for p in listing["providers"] if p["id"] == protocol]
    assert entry["availability"] == "COOLDOWN" and entry["keyable"] is True
    [cooldown] = entry["cooldowns"]
    assert cooldown["modality"] == "WEB"
    until = datetime.fromisoformat(cooldown["until"].replace("Z", "+00:00")).timestamp()
    assert before + 1800 - 5 <= until <= time.time() + 1800 + 5
    assert "not-the-right-key" not in json.dumps(listing)


def test_wrong_key_error_carries_the_providers_reason(tmp_path: Path, home: Path, emulator: Emulator) -> None:
    bases = mount_all(emulator)
    _, result, _ = cli(
        tmp_path, settings_for("tavily", bases["tavily"], apiKey="tvly-wrong"), "search", "x", "--json"
    )
    assert tried(result) == [("tavily", "hard_error")]
    assert last_error(result) == "HTTP 401 (Unauthorized: missing or invalid API key.)"


def test_an_error_body_echoing_the_key_never_shows_it(tmp_path: Path, home: Path, emulator: Emulator) -> None:
    emulator.add(
        "/echo/search",
        Reply.json({"message": "Invalid API key sk-wrong-4711, check your dashboard"}, status=403),
    )
    settings = settings_for("serper", f"{emulator.url}/echo", apiKey="sk-wrong-4711")
    _, result, _ = cli(tmp_path, settings, "search", "x", "--json")
    assert last_error(result) == "HTTP 403 (Invalid API key ***, check your dashboard)"
    assert "sk-wrong-4711" not in json.dumps(result)


def test_searxng_without_json_output_is_a_clear_hard_error(
    tmp_path: Path, home: Path, emulator: Emulator
) -> None:
    base = mount_searxng(emulator, {}, prefix="/sx-html", json_enabled=False)
    code, result, _ = cli(
        tmp_path, {**BUILTIN_OFF, **endpoint("sx", "searxng", base)}, "search", "stephen", "--json"
    )
    assert code == 3
    assert tried(result) == [("sx", "hard_error")]
    message = last_error(result)
    assert message.startswith("HTTP 403 (JSON output is not enabled on this SearXNG instance")
    assert "search.formats" in message


def test_searxng_every_engine_failed_is_soft(tmp_path: Path, home: Path, emulator: Emulator) -> None:
    base = mount_searxng(
        emulator, {"general": fixture_bytes("searxng", "search-json-all-engines-failed.json")}
    )
    code, result, _ = cli(
        tmp_path, {**BUILTIN_OFF, **endpoint("sx", "searxng", base)}, "search", "stephen", "--json"
    )
    assert code == 3  # no provider gave hits
    assert tried(result) == [("sx", "soft_error")]
    assert "fail http500 (HTTP error)" in last_error(result)
    code, listing, _ = cli(
        tmp_path, {**BUILTIN_OFF, **endpoint("sx", "searxng", base)}, "providers", "--json"
    )
    assert code == 0
    [entry] = [p for p in listing["providers"] if p["id"] == "sx"]
    assert entry["cooldowns"] == []  # a soft failure costs no cooldown


def test_searxng_without_base_url_fails_at_start_up(tmp_path: Path, home: Path) -> None:
    settings = {**BUILTIN_OFF, "research.endpoint.sx-home.protocol": "searxng"}
    code, output, stderr = cli(tmp_path, settings, "search", "stephen", "--json")
    assert code == 2
    assert output == ""
    assert "research.endpoint.sx-home.baseUrl" in stderr and "required" in stderr


def test_wrong_method_and_missing_query_are_refused_by_the_emulator(emulator: Emulator) -> None:
    """The emulator is strict like the real APIs, so the tests above prove method and body are right."""
    import httpx

    bases = mount_all(emulator)
    with httpx.Client() as client:
        assert (
            client.get(f"{bases['serper']}/search", headers={"X-API-KEY": KEYS["serper"]}).status_code == 405
        )
        assert (
            client.post(
                f"{bases['serper']}/search", headers={"X-API-KEY": KEYS["serper"]}, json={}
            ).status_code
            == 400
        )
        assert client.post(f"{bases['exa']}/search", json={"query": "x"}).status_code == 401
        ok = client.post(f"{bases['tavily']}/search", json={"query": "x", "api_key": KEYS["tavily"]})
        assert ok.status_code == 200  # the older body-key form is accepted too
        assert (
            client.get(f"{bases['searxng']}/search", params={"q": "x"}).status_code == 403
        )  # no format=json
        assert client.get(f"{bases['searxng']}/search", params={"format": "json"}).json() == {
            "error": "No query"
        }

"""`zarniwoop search QUERY -m MODALITY --json` end to end: the CLI, a YAML config pointing each
keyless provider at the loopback emulator, real HTTP, and the recorded bodies coming back as hits."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml
from defusedxml.ElementTree import fromstring
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app

from ..support.paths import fixture_bytes
from ..support.providers_academic import (
    ARXIV_SEARCH,
    HN_BY_DATE,
    HN_SEARCH,
    OPENALEX_WORKS,
    OPENLIBRARY_SEARCH,
    PUBMED_ESUMMARY,
    WIKI_SEARCH,
    add_arxiv,
    add_hackernews,
    add_openalex,
    add_openlibrary,
    add_pubmed,
    add_wikipedia,
)
from ..support.runtime import only

ATOM = "{http://www.w3.org/2005/Atom}"


def arxiv_expected(pdf: bool) -> list[tuple[str, str]]:
    feed = fromstring(fixture_bytes(*ARXIV_SEARCH))
    out = []
    for entry in feed.iter(f"{ATOM}entry"):
        title = " ".join(entry.findtext(f"{ATOM}title").split())
        links = {link.get("title") or link.get("rel"): link.get("href") for link in entry.iter(f"{ATOM}link")}
        out.append((title, links["pdf"] if pdf else links["alternate"]))
    return out


def pubmed_expected() -> list[tuple[str, str]]:
    root = fromstring(fixture_bytes(*PUBMED_ESUMMARY))
    return [
        (doc.find("Item[@Name='Title']").text, f"https://pubmed.ncbi.nlm.nih.gov/{doc.findtext('Id')}/")
        for doc in root.iter("DocSum")
    ]


def json_expected(parts: tuple[str, str], list_key: str, title: str, url: Callable[[dict], str]) -> Callable:
    def expected() -> list[tuple[str, str]]:
        return [(item[title], url(item)) for item in json.loads(fixture_bytes(*parts))[list_key]]

    return expected


def hn_url(item: dict) -> str:
    return item["url"] or f"https://news.ycombinator.com/item?id={item['objectID']}"


# (protocol/instance id, modality, mount routes → baseUrl, expected [(title, url)], max results)
CASES: list[tuple[str, str, Callable[[Any], str], Callable[[], list], int]] = [
    ("arxiv", "ACADEMIC", add_arxiv, lambda: arxiv_expected(pdf=False), 10),
    ("arxiv", "PDF", add_arxiv, lambda: arxiv_expected(pdf=True), 10),
    ("pubmed", "ACADEMIC", add_pubmed, pubmed_expected, 20),
    (
        "openlibrary",
        "BOOK",
        add_openlibrary,
        json_expected(OPENLIBRARY_SEARCH, "docs", "title", lambda d: f"https://openlibrary.org{d['key']}"),
        10,
    ),
    ("hackernews", "NEWS", add_hackernews, json_expected(HN_BY_DATE, "hits", "title", hn_url), 20),
    ("hackernews", "WEB", add_hackernews, json_expected(HN_SEARCH, "hits", "title", hn_url), 20),
    (
        "wikipedia",
        "ENCYCLOPEDIA",
        add_wikipedia,
        json_expected(WIKI_SEARCH, "pages", "title", lambda p: f"{{base}}/wiki/{p['key']}"),
        5,
    ),
    (
        "wikipedia",
        "WEB",
        add_wikipedia,
        json_expected(WIKI_SEARCH, "pages", "title", lambda p: f"{{base}}/wiki/{p['key']}"),
        5,
    ),
    (
        "openalex",
        "ACADEMIC",
        add_openalex,
        json_expected(OPENALEX_WORKS, "results", "display_name", lambda w: w["doi"]),
        10,
    ),
]


def write_config(tmp_path, instance: str, modality: str, base_url: str) -> str:
    settings = {
        **only(instance),
        f"research.endpoint.{instance}.baseUrl": base_url,
        f"research.default.{modality.lower()}": instance,
        "research.cache.ttlSeconds": 0,
        f"research.cache.ttlSeconds.{modality.lower()}": 0,
    }
    path = tmp_path / "zarniwoop.yaml"
    path.write_text(yaml.safe_dump({"settings": settings}))
    return str(path)


def search(config: str, *args: str):
    result = CliRunner().invoke(app, ["--config", config, "search", *args, "--json"])
    return result, (json.loads(result.stdout) if result.stdout.strip().startswith("{") else None)


@pytest.mark.parametrize(
    ("instance", "modality", "mount", "expected", "max_results"),
    CASES,
    ids=[f"{c[0]}-{c[1]}" for c in CASES],
)
def test_search_json_returns_the_fixture_hits(
    tmp_path, emulator, instance, modality, mount, expected, max_results
):
    base = mount(emulator)
    config = write_config(tmp_path, instance, modality, base)
    result, body = search(config, "testing", "-m", modality.lower(), "-n", str(max_results))
    assert result.exit_code == 0, result.output
    assert body["providerInstanceId"] == instance
    assert body["modality"] == modality
    assert body["errorMessage"] is None
    want = [(title, url.replace("{base}", base)) for title, url in expected()][:max_results]
    assert [(h["title"], h["url"]) for h in body["hits"]] == want
    assert body["returnedCount"] == len(want) > 0
    assert all(h["modality"] == modality and h["source"] == instance for h in body["hits"])
    [winner] = [a for a in body["attempts"] if a["outcome"] == "success"]
    assert winner["providerInstanceId"] == instance


def test_pubmed_search_made_both_calls_with_the_esearch_ids(tmp_path, emulator):
    base = add_pubmed(emulator)
    config = write_config(tmp_path, "pubmed", "ACADEMIC", base)
    result, body = search(config, "biopython", "-m", "academic", "-n", "3")
    assert result.exit_code == 0, result.output
    [esearch] = emulator.requests("/pubmed/esearch.fcgi")
    [esummary] = emulator.requests("/pubmed/esummary.fcgi")
    assert esearch.param("term") == "biopython" and esearch.param("retmax") == "3"
    assert esummary.param("id") == "41282813,41148224,41011574"
    assert esummary.param("tool") == "zarniwoop"
    assert body["hits"][0]["content"]["inline"] == "STASH_ON_DEMAND"
    assert body["hits"][0]["extras"]["pmid"] == "11850928"


def test_arxiv_400_error_feed_is_a_soft_error_without_cooldown(tmp_path, emulator):
    base = add_arxiv(emulator)
    config = write_config(tmp_path, "arxiv", "ACADEMIC", base)
    for _ in range(2):
        result, body = search(config, "id:abc", "-m", "academic")
        assert result.exit_code == 3
        [attempt] = [a for a in body["attempts"] if a["providerInstanceId"] == "arxiv"]
        assert attempt["outcome"] == "soft_error"
        assert attempt["errorMessage"] == "arxiv: incorrect id format for abc"
    assert len(emulator.requests("/arxiv/api/query")) == 2  # no cooldown: the second search asked again


def test_hackernews_date_range_reaches_the_wire_and_site_is_noted(tmp_path, emulator):
    base = add_hackernews(emulator)
    config = write_config(tmp_path, "hackernews", "NEWS", base)
    result, body = search(
        config,
        "trump",
        "-m",
        "news",
        "--date-from",
        "2020-02-01",
        "--site",
        "wsj.com",
        "--provider",
        "hackernews",
    )
    assert result.exit_code == 0, result.output
    assert body["tier"] == "EXPERT"
    assert body["note"] == "ignored by this provider: site"
    [request] = emulator.requests("/hn/api/v1/search_by_date")
    assert request.param("numericFilters") == "created_at_i>=1580515200"
    assert body["hits"][0]["extras"]["outlet"] == "wsj.com"


def test_pubmed_key_optional_sent_when_set_and_a_wrong_one_is_a_hard_error_without_echo(tmp_path, emulator):
    base = add_pubmed(emulator, api_key="right-key")
    config = write_config(tmp_path, "pubmed", "ACADEMIC", base)
    result, body = search(config, "biopython", "-m", "academic")
    assert result.exit_code == 0 and body["returnedCount"] == 2  # no key: fine, just slower pacing
    assert emulator.requests("/pubmed/esearch.fcgi")[0].param("api_key") is None

    cfg = yaml.safe_load((tmp_path / "zarniwoop.yaml").read_text())
    cfg["settings"]["research.endpoint.pubmed.apiKey"] = "right-key"
    (tmp_path / "zarniwoop.yaml").write_text(yaml.safe_dump(cfg))
    result, body = search(config, "biopython two", "-m", "academic")
    assert result.exit_code == 0 and body["returnedCount"] == 2
    assert emulator.requests("/pubmed/esummary.fcgi")[-1].param("api_key") == "right-key"

    cfg["settings"]["research.endpoint.pubmed.apiKey"] = "wrong-key-0123456789"
    (tmp_path / "zarniwoop.yaml").write_text(yaml.safe_dump(cfg))
    before = datetime.now(UTC).replace(microsecond=0)  # `until` is given in whole seconds
    result, body = search(config, "biopython three", "-m", "academic")
    assert result.exit_code == 3
    [attempt] = [a for a in body["attempts"] if a["providerInstanceId"] == "pubmed"]
    assert attempt["outcome"] == "hard_error"
    assert attempt["errorMessage"] == "HTTP 400 (API key invalid)"
    assert "wrong-key-0123456789" not in result.stdout + result.stderr
    # A refused key benches the provider for 30 minutes, like a 401/403.
    providers = CliRunner().invoke(app, ["--config", config, "providers", "--json"])
    [entry] = [e for e in json.loads(providers.stdout)["providers"] if e["id"] == "pubmed"]
    [cooldown] = entry["cooldowns"]
    until = datetime.fromisoformat(cooldown["until"].replace("Z", "+00:00"))
    assert before + timedelta(seconds=1800) <= until <= datetime.now(UTC) + timedelta(seconds=1800)
    assert "wrong-key-0123456789" not in providers.stdout

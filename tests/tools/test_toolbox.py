"""The tools end to end: real runtime, real HTTP to the loopback emulator, text and structured JSON."""

from __future__ import annotations

import pytest

from zarniwoop.contract import SearchScope
from zarniwoop.tools import Toolbox
from zarniwoop.tools.render import render_hits

from ..support.bodies import openalex_works, wikipedia_pages
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio
SCOPE = SearchScope()
WIKI = "/w/w/rest.php/v1/search/page"


def two_wikis(emulator, **extra):
    return {
        **only(),
        **endpoint("wiki-a", "wikipedia", f"{emulator.url}/a"),
        **endpoint("wiki-b", "wikipedia", f"{emulator.url}/w"),
        "research.default.encyclopedia": "wiki-a",
        "research.fallback.encyclopedia": "wiki-b",
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.encyclopedia": 0,
        **extra,
    }


async def test_research_search_text_is_numbered_hits_and_structured_is_the_search_result(tmp_path, emulator):
    emulator.add("/a/w/rest.php/v1/search/page", Reply(status=503))
    emulator.add(WIKI, Reply.json(wikipedia_pages("Fermat's Last Theorem", "Andrew Wiles")))
    async with await open_runtime(tmp_path, two_wikis(emulator)) as rt:
        result = await Toolbox(rt).execute(
            "research_search", {"query": "fermat", "modality": "encyclopedia", "maxResults": 5}, SCOPE
        )
    assert not result.is_error
    data = result.structured
    assert data["providerInstanceId"] == "wiki-b"
    assert [h["title"] for h in data["hits"]] == ["Fermat's Last Theorem", "Andrew Wiles"]
    assert [
        (a["providerInstanceId"], a["outcome"])
        for a in data["attempts"]
        if a["outcome"] != "skipped_disabled"
    ] == [
        ("wiki-a", "hard_error"),
        ("wiki-b", "success"),
    ]
    assert result.text.splitlines()[:3] == [
        "[1] Fermat's Last Theorem",
        f"    {emulator.url}/w/wiki/Fermat%27s_Last_Theorem",
        "    Fermat's Last Theorem is a thing",
    ]
    assert "(via" not in result.text  # provenance is off by default: byte-identical output


async def test_provenance_footer_when_enabled(tmp_path, emulator):
    emulator.add("/a/w/rest.php/v1/search/page", Reply(status=503))
    emulator.add(WIKI, Reply.json(wikipedia_pages("Fermat's Last Theorem")))
    async with await open_runtime(tmp_path, two_wikis(emulator, **{"research.provenance": True})) as rt:
        toolbox = Toolbox(rt)
        first = await toolbox.execute(
            "research_search", {"query": "fermat", "modality": "ENCYCLOPEDIA"}, SCOPE
        )
        assert first.text.endswith("\n\n(via wiki-b — wiki-a fell over)")
        emulator.add("/a/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Pierre de Fermat")))
        pinned = await toolbox.execute(
            "research_search_expert",
            {"query": "fermat", "modality": "ENCYCLOPEDIA", "maxResults": 3, "pinnedProviderId": "wiki-b"},
            SCOPE,
        )
        assert pinned.text.endswith("\n\n(via wiki-b)")
        assert pinned.structured["tier"] == "EXPERT"
        assert [a["providerInstanceId"] for a in pinned.structured["attempts"]] == ["wiki-b"]


async def test_every_provider_failing_is_an_error_result_naming_each_reason(tmp_path, emulator):
    emulator.add("/a/w/rest.php/v1/search/page", Reply(status=503))
    emulator.add(WIKI, Reply(status=500))
    async with await open_runtime(tmp_path, two_wikis(emulator)) as rt:
        result = await Toolbox(rt).execute(
            "research_search", {"query": "x", "modality": "encyclopedia"}, SCOPE
        )
    assert result.is_error
    assert "hits" not in result.structured  # compact: no empty fields
    assert result.full["hits"] == [] and result.full["returnedCount"] == 0  # the HTTP shape keeps them
    assert "wiki-a: HTTP 503" in result.structured["errorMessage"]
    assert "wiki-b: HTTP 500" in result.structured["errorMessage"]
    assert result.text.startswith("No results for 'x' (ENCYCLOPEDIA): every provider failed")


async def test_research_providers_hides_last_error_from_users(tmp_path, emulator):
    emulator.add("/a/w/rest.php/v1/search/page", Reply(status=503))
    emulator.add(WIKI, Reply.json(wikipedia_pages("A")))
    async with await open_runtime(tmp_path, two_wikis(emulator)) as rt:
        toolbox = Toolbox(rt)
        await toolbox.execute("research_search", {"query": "x", "modality": "encyclopedia"}, SCOPE)
        user = await toolbox.execute("research_providers", {}, SCOPE, admin=False)
        admin = await toolbox.execute("research_providers", {}, SCOPE, admin=True)
    user_a = next(e for e in user.structured["providers"] if e["id"] == "wiki-a")
    admin_a = next(e for e in admin.structured["providers"] if e["id"] == "wiki-a")
    assert "lastError" not in user_a and "last error" not in user.text
    assert admin_a["lastError"] == "HTTP 503"
    assert "    last error: HTTP 503" in admin.text
    assert user_a["availability"] == admin_a["availability"] == "COOLDOWN"
    assert user_a["reachable"] is False


async def test_investigate_runs_the_curated_pipeline(tmp_path, emulator):
    emulator.add(WIKI, Reply.json(wikipedia_pages("CRISPR", "Genome editing")))
    emulator.add("/oa/works", Reply.json(openalex_works(3, prefix="CRISPR off-target")))
    settings = {
        **only(),
        **endpoint("wiki-b", "wikipedia", f"{emulator.url}/w"),
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
    }
    async with await open_runtime(tmp_path, settings) as rt:
        result = await Toolbox(rt).execute(
            "research_investigate", {"question": "crispr off-target effects", "maxResults": 5}, SCOPE
        )
    assert not result.is_error
    data = result.structured
    assert data["question"] == "crispr off-target effects"
    assert [h["hit"]["title"] for h in data["hits"]] == [f"CRISPR off-target {i}" for i in (1, 2, 3)]
    assert {d["hit"]["title"] for d in data["dropped"]} == {"CRISPR", "Genome editing"}
    assert data["strategies"] == {"plan": "heuristic", "evaluate": "lexical", "insights": "extractive"}
    lines = result.text.splitlines()
    assert lines[0] == "[1] CRISPR off-target 1"
    assert lines[2] == "    score 0.67 · found by oa · matches 2/3 key terms"
    assert result.text.endswith("\n\n(plan: heuristic · evaluate: lexical · insights: extractive)")
    assert "Dropped 2: " in result.text


async def test_call_turns_bad_arguments_into_an_error_result(tmp_path):
    async with await open_runtime(tmp_path, only()) as rt:
        answer = await Toolbox(rt).call("research_search", {"query": "x", "modality": "sounds"}, SCOPE)
    assert answer.is_error
    assert answer.structured["error"]["field"] == "modality"
    assert answer.text.startswith("Invalid arguments: modality: expected one of WEB, IMAGE")


async def test_academic_hits_render_their_details(tmp_path, emulator):
    emulator.add("/oa/works", Reply.json(openalex_works(2)))
    settings = {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
        "research.cache.ttlSeconds.academic": 0,
    }
    async with await open_runtime(tmp_path, settings) as rt:
        result = await Toolbox(rt).execute(
            "research_search", {"query": "crispr", "modality": "academic"}, SCOPE
        )
    lines = result.text.splitlines()
    assert lines[0] == "[1] Work 1"
    assert lines[2].startswith("    Author 1 · 2021 · Venue · doi:")


def test_render_hits_cuts_long_snippets():
    from zarniwoop.contract import Modality, SearchHit

    hit = SearchHit(title="T\nitle", url="https://e.org", modality=Modality.WEB, snippet="word " * 200)
    lines = render_hits([hit]).splitlines()
    assert lines[0] == "[1] T itle"
    assert len(lines[2]) == 4 + 300 and lines[2].endswith("…")

"""The Python API: `async with Zarniwoop.open(...)`, typed methods, tools by name, the sync facade."""

from __future__ import annotations

import asyncio
import threading

import pytest

from zarniwoop import InvalidRequestError, Modality, Zarniwoop
from zarniwoop.contract import SearchScope

from .support.bodies import wikipedia_pages
from .support.emulator import Reply
from .support.media import MEDIA_PROTOCOLS, media_items
from .support.runtime import endpoint, only, write_config

WIKI = "/w/w/rest.php/v1/search/page"


def wiki_config(emulator, tmp_path, **settings):
    body = {
        "settings": {
            **only(),
            **endpoint("wiki", "wikipedia", f"{emulator.url}/w"),
            "research.cache.ttlSeconds": 0,
            "research.cache.ttlSeconds.encyclopedia": 0,
            **settings,
        },
        "tenants": {"acme": {"projects": {"review": {"settings": {"research.provenance": True}}}}},
    }
    return write_config(tmp_path, body)


@pytest.mark.anyio
async def test_open_search_and_call_tool_by_name(tmp_path, emulator):
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora", "Aurora borealis")))
    config = wiki_config(emulator, tmp_path)
    async with Zarniwoop.open(config=config, tenant="acme", project="review", home=tmp_path / "home") as zw:
        assert zw.scope == SearchScope("acme", "review")
        result = await zw.search("aurora", "encyclopedia", max_results=1)
        assert [h.title for h in result.hits] == ["Aurora"] and result.provider_instance_id == "wiki"
        answer = await zw.call_tool("research_search", {"query": "aurora", "modality": "ENCYCLOPEDIA"})
        assert not answer.is_error
        assert answer.text.startswith("[1] Aurora\n")
        assert answer.text.endswith("(via wiki)")  # research.provenance is on for acme/review
        assert answer.structured["hits"][1]["title"] == "Aurora borealis"
        bad = await zw.call_tool("research_search", {"query": "aurora", "modality": "smells"})
        assert bad.is_error and bad.structured["error"]["field"] == "modality"
        with pytest.raises(InvalidRequestError) as caught:
            await zw.search("aurora", "smells")
        assert caught.value.field == "modality"
        with pytest.raises(InvalidRequestError) as caught:
            await zw.search("", "web")
        assert caught.value.field == "query"
        investigation = await zw.investigate("aurora", max_results=3)
        assert investigation.question == "aurora"
        assert [h.hit.title for h in investigation.hits][:1] == ["Aurora"]
        with pytest.raises(InvalidRequestError) as caught:
            await zw.investigate("aurora", depth=9)
        assert caught.value.field == "depth"
        providers = await zw.providers()
        assert [p["id"] for p in providers if p["enabled"]] == ["wiki"]
        routing = await zw.routing()
        # disabled built-ins are not candidates unless named as default/fallback
        assert routing["searchCascades"]["ENCYCLOPEDIA"] == [
            {"id": "wiki", "gate": "ready", "selected": True, "place": "configured"}
        ]
        other = zw.scoped(project="other")
        assert other.scope == SearchScope("acme", "other")
        plain = await other.call_tool("research_search", {"query": "aurora", "modality": "encyclopedia"})
        assert "(via" not in plain.text  # provenance is off outside acme/review
        await other.aclose()  # does not close the shared runtime
        assert (await zw.search("aurora", "encyclopedia")).hits


@pytest.mark.anyio
async def test_search_takes_the_filters_in_either_spelling(tmp_path, emulator):
    """Issue 47: wikipedia's wire takes no filter — the time range is reported ignored, the excluded
    domain's hits dropped after the answer (its pages are on the emulator's host), a bad one refused."""
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora", "Aurora borealis")))
    config = wiki_config(emulator, tmp_path)
    async with Zarniwoop.open(config=config, home=tmp_path / "home") as zw:
        result = await zw.search("aurora", "encyclopedia", time_range="week", excludeDomains=["example.org"])
        assert [p.param for p in result.ignored_params] == ["timeRange"]
        assert len(result.hits) == 2 and result.dropped_count == 0
        with pytest.raises(InvalidRequestError) as caught:
            await zw.search_expert("aurora", "encyclopedia", exclude_domains=["not a domain"])
        assert caught.value.field == "excludeDomains"


@pytest.mark.anyio
async def test_open_can_be_awaited_and_takes_a_config_mapping(tmp_path, emulator):
    for kind in ("web", "image", "video", "news"):
        emulator.add(f"/m/{kind}", Reply.json(media_items(kind)))
    config = {"settings": {**only(), **endpoint("media", "mediatest", f"{emulator.url}/m")}}
    zw = await Zarniwoop.open(config=config, home=tmp_path / "home", protocols=MEDIA_PROTOCOLS)
    try:
        results = await zw.rich("aurora", max_results=1)
        assert {m: [h.title for h in r.hits] for m, r in results.items()} == {
            Modality.WEB: ["web hit 1"],
            Modality.IMAGE: ["image hit 1"],
            Modality.VIDEO: ["video hit 1"],
            Modality.NEWS: ["news hit 1"],
        }
        assert results["IMAGE"] is results[Modality.IMAGE]
    finally:
        await zw.aclose()


def test_tool_definitions_for_every_dialect_match_the_module_function(tmp_path):
    import zarniwoop

    with Zarniwoop.open_sync(config={"settings": only()}, home=tmp_path / "home") as zw:
        mcp = zw.tool_definitions()
        openai = zw.tool_definitions("openai")
        anthropic = zw.tool_definitions("anthropic")
        gemini = zw.tool_definitions("gemini")
        with pytest.raises(InvalidRequestError) as refused:
            zw.tool_definitions("cohere")  # type: ignore[arg-type]
    assert refused.value.message == "dialect: expected one of mcp, openai, anthropic, gemini, got 'cohere'"
    for dialect, definitions in [
        ("mcp", mcp),
        ("openai", openai),
        ("anthropic", anthropic),
        ("gemini", gemini),
    ]:
        assert zarniwoop.tool_definitions(dialect) == definitions  # no runtime needed
    assert [d["name"] for d in mcp] == [
        "research_search",
        "research_search_expert",
        "research_rich",
        "research_investigate",
        "research_providers",
    ]
    assert openai[0]["type"] == "function"
    assert openai[0]["function"]["strict"] is True
    assert openai[0]["function"]["description"] == mcp[0]["description"]
    assert anthropic[2] == {
        "name": "research_rich",
        "description": mcp[2]["description"],
        "input_schema": mcp[2]["inputSchema"],
    }
    assert gemini[4] == {"name": "research_providers", "description": mcp[4]["description"]}


def test_sync_facade_works_in_scripts_and_inside_a_running_loop(tmp_path, emulator):
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora")))
    config = wiki_config(emulator, tmp_path)
    with Zarniwoop.open_sync(config=config, home=tmp_path / "home") as zw:
        assert [t.name for t in threading.enumerate() if t.name.startswith("asyncio-portal")]
        assert zw.search("aurora", "encyclopedia").hits[0].title == "Aurora"
        assert zw.call_tool("research_providers").structured["providers"][0]["id"]

    async def notebook_cell() -> str:  # Jupyter runs cells inside a running event loop
        with Zarniwoop.open_sync(config=config, home=tmp_path / "home") as inner:
            return inner.search("aurora", "encyclopedia").hits[0].title

    assert asyncio.run(notebook_cell()) == "Aurora"
    assert not [
        t.name for t in threading.enumerate() if t.name.startswith("asyncio-portal")
    ]  # loop thread ended


def test_sync_facade_raises_config_errors_and_rejects_use_after_close(tmp_path):
    from zarniwoop import ConfigError

    with pytest.raises(ConfigError) as caught:
        Zarniwoop.open_sync(config={"settings": {"research.default.web": "nowhere"}}, home=tmp_path / "home")
    assert caught.value.key == "research.default.web"
    zw = Zarniwoop.open_sync(config={"settings": only()}, home=tmp_path / "home")
    zw.close()
    zw.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        zw.providers()

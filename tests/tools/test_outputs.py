"""Each tool's `structuredContent`, on recorded provider bodies, validates against its `outputSchema`,
and is compact: nothing null or empty, nothing said twice. The full JSON of the HTTP research
endpoints validates against the same schema.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from zarniwoop.contract import SearchScope
from zarniwoop.tools import TOOL_NAMES, Toolbox, tool_spec

from ..support.runtime import open_runtime
from ..support.tool_calls import CALLS, mount_recorded

pytestmark = pytest.mark.anyio
SCOPE = SearchScope("default", "default")
RECORDED_PAPER = "PaperQA: Retrieval-Augmented Generative Agent for Scientific Research"


def empties(value: Any, path: str = "$") -> list[str]:
    """Paths of every null, empty string, empty list or empty object inside `value`."""
    found: list[str] = []
    if value is None or value == "" or value == [] or value == {}:
        return [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += empties(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += empties(item, f"{path}[{index}]")
    return found


@pytest.fixture
async def results(tmp_path, emulator):
    async with await open_runtime(tmp_path, mount_recorded(emulator)) as rt:
        toolbox = Toolbox(rt)
        yield {name: await toolbox.execute(name, CALLS[name], SCOPE, admin=True) for name in TOOL_NAMES}


async def test_structured_content_validates_against_the_output_schema_and_is_compact(results):
    for name, result in results.items():
        assert not result.is_error, (name, result.text)
        schema = tool_spec(name).output_schema
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.validate(result.structured, schema, cls=jsonschema.Draft202012Validator)
        jsonschema.validate(result.full, schema, cls=jsonschema.Draft202012Validator)
        # the one exception: a rich section or a providers list that is legitimately empty is required
        assert empties(result.structured) == [], name


async def test_the_recorded_bodies_came_through(results):
    search = results["research_search"].structured
    assert search["providerInstanceId"] == "openalex"
    assert [h["title"] for h in search["hits"]] == [RECORDED_PAPER]
    assert "modality" not in search["hits"][0]  # said once, at the top
    assert "returnedCount" not in search  # it is len(hits)
    assert results["research_search"].full["returnedCount"] == 1
    assert results["research_search"].full["hits"][0]["modality"] == "ACADEMIC"
    rich = results["research_rich"].structured
    assert list(rich["results"]) == ["WEB", "IMAGE", "VIDEO", "NEWS"]
    assert all(section["providerInstanceId"] == "brave" for section in rich["results"].values())
    assert all("query" not in s and "tier" not in s for s in rich["results"].values())
    investigate = results["research_investigate"].structured
    assert "plan" not in investigate  # its searches, strategy and rationale are said elsewhere
    assert investigate["strategies"] == {"plan": "heuristic", "evaluate": "lexical", "insights": "extractive"}
    assert investigate["hits"] and investigate["searches"]
    assert results["research_investigate"].full["plan"]["strategy"] == "heuristic"
    providers = results["research_providers"].structured["providers"]
    assert {p["id"] for p in providers if p["enabled"]} == {"brave", "openalex", "wikipedia"}


async def test_compact_is_smaller_than_full(results):
    import json

    for name, result in results.items():
        assert len(json.dumps(result.structured)) < len(json.dumps(result.full)), name


async def test_a_cached_answer_validates_and_says_when(tmp_path, emulator):
    settings = {**mount_recorded(emulator), "research.cache.ttlSeconds.academic": 600}
    async with await open_runtime(tmp_path, settings) as rt:
        toolbox = Toolbox(rt)
        await toolbox.execute("research_search", CALLS["research_search"], SCOPE)
        again = await toolbox.execute("research_search", CALLS["research_search"], SCOPE)
    assert again.structured["cached"] is True
    assert again.structured["cachedAt"].endswith("Z")
    jsonschema.validate(again.structured, tool_spec("research_search").output_schema)

"""HTTP on a real `zarniwoop serve`: the dialects of `GET /v1/tools`, `null` for every optional
argument, investigate's progress as Server-Sent Events, typed response schemas in `/openapi.json`.
"""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

from zarniwoop.tools import TOOL_NAMES, tool_spec
from zarniwoop.tools.dialects import DIALECTS, tools_document

from ..support.tool_calls import CALLS, served_recorded, with_nulls

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group(__name__)]  # one server for the module
ROUTES = {
    "research_search": ("POST", "/v1/research/search"),
    "research_search_expert": ("POST", "/v1/research/search_expert"),
    "research_rich": ("POST", "/v1/research/rich"),
    "research_investigate": ("POST", "/v1/research/investigate"),
    "research_providers": ("GET", "/v1/research/providers"),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with served_recorded(tmp_path_factory.mktemp("tools-protocol")) as running:
        yield running


@pytest.fixture
async def http(server):
    headers = {"Authorization": f"Bearer {server.token}"}
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=30) as client:
        yield client


async def read_events(response) -> list[tuple[str, dict]]:
    events, name = [], None
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            events.append((name, json.loads(line.removeprefix("data: "))))
    return events


async def test_tools_in_every_dialect_and_an_unknown_one_names_the_parameter(http):
    for dialect in DIALECTS:
        answer = await http.get("/v1/tools", params={"dialect": dialect})
        assert answer.status_code == 200
        assert answer.json() == tools_document(dialect)
    assert (await http.get("/v1/tools")).json() == tools_document("mcp")
    bad = await http.get("/v1/tools", params={"dialect": "cohere"})
    assert bad.status_code == 422
    assert bad.json()["error"]["field"] == "dialect"


async def test_null_for_every_optional_argument_succeeds_on_every_route(http):
    for name in TOOL_NAMES:
        arguments = with_nulls(name, tool_spec(name).input_schema)
        called = await http.post(f"/v1/tools/{name}", json=arguments)
        assert called.status_code == 200, called.text
        assert called.json()["isError"] is False
        jsonschema.validate(called.json()["structured"], tool_spec(name).output_schema)
        method, path = ROUTES[name]
        direct = await http.request(method, path, json=arguments if method == "POST" else None)
        assert direct.status_code == 200, direct.text
        jsonschema.validate(direct.json(), tool_spec(name).output_schema)  # full JSON, the same schema
    search = (
        await http.post(
            "/v1/research/search",
            json=with_nulls("research_search", tool_spec("research_search").input_schema),
        )
    ).json()
    assert search["returnedCount"] == 10  # maxResults null → the default, 10


async def test_investigate_streams_its_steps_then_the_result(http):
    plain = (await http.post("/v1/research/investigate", json=CALLS["research_investigate"])).json()
    async with http.stream(
        "POST",
        "/v1/research/investigate",
        json=CALLS["research_investigate"],
        headers={"Accept": "text/event-stream"},
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = await read_events(response)
    kinds = [name for name, _ in events]
    assert kinds == ["progress"] * (len(events) - 1) + ["result"]
    steps = [data["step"] for name, data in events if name == "progress"]
    assert steps == ["plan", *["search"] * len(plain["searches"]), "dedup", "evaluate", "insights"]
    assert [data["done"] for _, data in events[:-1]] == list(range(1, len(events)))
    assert events[0][1]["message"] == f"planned {len(plain['searches'])} searches (heuristic)"
    result = events[-1][1]
    assert [h["hit"]["url"] for h in result["hits"]] == [h["hit"]["url"] for h in plain["hits"]]
    assert result["plan"] == plain["plan"]  # the full RankedHitSet, as without the header


async def test_a_bad_streamed_request_is_the_usual_422(http):
    refused = await http.post(
        "/v1/research/investigate", json={"question": ""}, headers={"Accept": "text/event-stream"}
    )
    assert refused.status_code == 422
    assert refused.json() == {"error": {"field": "question", "message": "question: must not be empty"}}


async def test_openapi_types_every_research_response(http):
    document = (await http.get("/openapi.json")).json()

    def schema_of(method: str, path: str) -> str:
        content = document["paths"][path][method.lower()]["responses"]["200"]["content"]
        return content["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]

    assert {name: schema_of(*route) for name, route in ROUTES.items()} == {
        "research_search": "SearchResult",
        "research_search_expert": "SearchResult",
        "research_rich": "RichResult",
        "research_investigate": "RankedHitSet",
        "research_providers": "ProviderList",
    }
    assert schema_of("GET", "/v1/_routing") == "RoutingView"
    assert schema_of("GET", "/v1/usage") == "UsageReport"
    components = document["components"]["schemas"]
    assert set(components["SearchResult"]["required"]) == {"query", "modality", "tier"}
    assert components["SearchHit"]["properties"]["title"]["type"] == "string"
    streamed = document["paths"]["/v1/research/investigate"]["post"]["responses"]["200"]["content"]
    assert "text/event-stream" in streamed


async def test_openapi_bodies_are_the_published_tool_schemas(http):
    """The research endpoints' request bodies say what they accept: optional parameters nullable."""
    components = (await http.get("/openapi.json")).json()["components"]["schemas"]
    body = components["SearchExpertBody"]
    assert body["required"] == ["query", "modality", "maxResults"]
    assert body["properties"]["pinnedProviderId"]["type"] == ["string", "null"]
    assert body["properties"]["maxResults"]["type"] == "integer"
    published = tool_spec("research_search_expert").input_schema["properties"]
    for name in ("site", "dateFrom", "language", "pinnedProviderId"):
        assert body["properties"][name] == published[name]

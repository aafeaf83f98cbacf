"""`Prefer: respond-async` on `POST /v1/research/investigate` and `/v1/tasks` (issue 45): 202 with
`Location`, the task polled to its result, another token's or tenant's request for the id a 404,
`DELETE` cancelling, and the OpenAPI document naming the shapes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from zarniwoop.surfaces.http import create_app
from zarniwoop.tenancy.tokens import TokenStore

from ..support.bodies import openalex_works, wikipedia_pages
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, write_config
from ..support.waiting import until

QUESTION = "What evidence is there for off-target effects of CRISPR?"
ASYNC = {"Prefer": "respond-async, wait=0"}


@dataclass
class Api:
    client: TestClient
    tokens: dict[str, str]

    def call(self, method: str, path: str, who: str = "alice", **kwargs):
        headers = {"Authorization": f"Bearer {self.tokens[who]}", **kwargs.pop("headers", {})}
        return self.client.request(method, path, headers=headers, **kwargs)

    def start(self, who: str = "alice"):
        return self.call("POST", "/v1/research/investigate", who, json={"question": QUESTION}, headers=ASYNC)


@pytest.fixture
def api(tmp_path, emulator) -> Iterator[Api]:
    settings = {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/wiki"),
        "research.investigate.minHits": 1,
    }
    app = create_app(config=write_config(tmp_path, {"settings": settings}), home=tmp_path / "home")
    with TestClient(app, raise_server_exceptions=False) as client:
        store = TokenStore(app.state.zarniwoop.runtime.db)
        made = {
            "alice": ("acme", "review"),
            "bob": ("acme", "review"),  # the same scope, another token
            "globex": ("globex", "review"),
        }
        tokens = {
            who: client.portal.call(store.create, tenant, project, "user").token  # type: ignore[union-attr]
            for who, (tenant, project) in made.items()
        }
        yield Api(client, tokens)


def test_respond_async_answers_202_and_the_task_is_polled_to_its_result(api, emulator):
    emulator.add("/oa/works", Reply.json(openalex_works(2, "CRISPR off-target")))
    emulator.add("/wiki/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Off-target genome editing")))
    started = api.start()
    assert started.status_code == 202, started.text
    task = started.json()
    assert started.headers["location"] == f"/v1/tasks/{task['taskId']}"
    assert started.headers["preference-applied"] == "respond-async"
    assert (task["tool"], task["status"]) == ("research_investigate", "working")

    def finished():
        body = api.call("GET", started.headers["location"]).json()
        return body if body["status"] != "working" else None

    done = until(finished, "the task to finish")
    assert done["status"] == "completed"
    direct = api.call("POST", "/v1/research/investigate", json={"question": QUESTION}).json()
    assert done["result"]["hits"] == direct["hits"] and done["result"]["plan"] == direct["plan"]
    assert done["progress"]["step"] == "insights" and done["progress"]["done"] == done["progress"]["total"]
    listed = api.call("GET", "/v1/tasks").json()["tasks"]
    assert [(t["taskId"], t["status"]) for t in listed] == [(task["taskId"], "completed")]
    assert "result" not in listed[0]
    # another token of the same scope, or another tenant: as if the id did not exist
    for who in ("bob", "globex"):
        for method in ("GET", "DELETE"):
            refused = api.call(method, started.headers["location"], who)
            assert refused.status_code == 404
            assert refused.json() == {
                "error": {"message": "no such task (unknown, expired, or not this caller's)"}
            }
        assert api.call("GET", "/v1/tasks", who).json() == {"tasks": []}
    # cancelling a finished task changes nothing
    assert api.call("DELETE", started.headers["location"]).json()["status"] == "completed"
    assert api.call("GET", "/v1/tasks/not*an*id").status_code == 422


def test_delete_cancels_a_running_task_and_its_searches_stop(api, emulator):
    release = emulator.add_held("/oa/works", Reply.json(openalex_works(2)))
    emulator.add("/wiki/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Off-target genome editing")))
    try:
        location = api.start().headers["location"]
        until(lambda: emulator.requests("/oa/works"), "the academic search upstream")
        cancelled = api.call("DELETE", location)
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    finally:
        release.set()
    assert api.call("GET", location).json()["status"] == "cancelled"
    assert len(emulator.requests("/oa/works")) == 1


def test_the_openapi_document_names_the_task_shapes(api):
    document = api.client.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    assert {"Task", "TaskList", "TaskProgress"} <= set(schemas)
    assert schemas["Task"]["properties"]["status"]["enum"] == ["working", "completed", "failed", "cancelled"]
    investigate = document["paths"]["/v1/research/investigate"]["post"]["responses"]
    assert investigate["202"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Task"
    }
    paths = document["paths"]
    assert set(paths["/v1/tasks/{task_id}"]) == {"get", "delete"} and "get" in paths["/v1/tasks"]

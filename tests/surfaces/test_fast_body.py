"""The search routes' fast body path (`surfaces/http/fast_body.py`): a plain request skips FastAPI's
body and dependency machinery, and gives the same answer as FastAPI's own handler; every other
request (bad body, other content type, query parameters) is FastAPI's, 422 shape included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import fastapi.routing
import pytest
from fastapi.testclient import TestClient
from starlette.requests import Request

from zarniwoop.surfaces.http import create_app
from zarniwoop.tenancy.tokens import TokenStore

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, write_config

SEARCH = "/v1/research/search"
BODY = {"query": "aurora", "modality": "encyclopedia", "maxResults": 2}


@pytest.fixture
def served(tmp_path, emulator, monkeypatch) -> Iterator[tuple[TestClient, dict[str, str], list[int]]]:
    """A client, a user token's headers, and how many times FastAPI's handler decoded a body or
    solved a route's dependencies (a malformed body stops at the first, an empty one skips it)."""
    emulator.add("/w/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Aurora", "Aurora borealis")))
    settings = {
        **only(),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/w"),
        "research.cache.ttlSeconds": 0,
    }
    solved = [0]
    original = fastapi.routing.solve_dependencies

    async def counted(*args: Any, **kwargs: Any) -> Any:
        solved[0] += 1
        return await original(*args, **kwargs)

    async def decoded(self: Request) -> Any:
        solved[0] += 1
        return await original_json(self)

    original_json = Request.json
    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counted)
    monkeypatch.setattr(Request, "json", decoded)
    app = create_app(config=write_config(tmp_path, {"settings": settings}), home=tmp_path / "home")
    with TestClient(app, raise_server_exceptions=False) as client:
        token = client.portal.call(
            TokenStore(app.state.zarniwoop.runtime.db).create, "acme", "a", "user"
        ).token
        yield client, {"Authorization": f"Bearer {token}"}, solved


def _hits(response: Any) -> list[tuple[str, str]]:
    return [(hit["title"], hit["url"].rsplit("/", 1)[-1]) for hit in response.json()["hits"]]


def test_a_plain_search_takes_the_fast_path_and_answers_as_fastapi_does(served):
    client, auth, solved = served
    fast = client.post(SEARCH, headers=auth, json=BODY)
    assert solved == [0]  # FastAPI's body decoding and dependency solving were skipped
    # the same search through FastAPI's handler: a content type with a charset is not the plain case
    slow = client.post(
        SEARCH,
        headers={**auth, "Content-Type": "application/json; charset=utf-8"},
        content=json.dumps(BODY).encode(),
    )
    assert solved[0] > 0
    assert fast.status_code == slow.status_code == 200
    assert fast.headers["cache-control"] == slow.headers["cache-control"] == "no-store"
    assert (
        _hits(fast)
        == _hits(slow)
        == [
            ("Aurora", "Aurora"),
            ("Aurora borealis", "Aurora_borealis"),
        ]
    )
    assert fast.json()["modality"] == slow.json()["modality"] == "ENCYCLOPEDIA"


def test_query_parameters_go_through_fastapi_and_are_still_checked(served):
    client, auth, solved = served
    named = client.post(SEARCH, headers=auth, json=BODY, params={"tenant": "acme", "project": "a"})
    assert named.status_code == 200 and len(named.json()["hits"]) == 2 and solved[0] > 0
    other = client.post(SEARCH, headers=auth, json=BODY, params={"project": "b"})
    assert other.status_code == 403  # a project the token is not bound to
    too_long = client.post(SEARCH, headers=auth, json=BODY, params={"tenant": "t" * 500})
    assert too_long.status_code == 422 and too_long.json()["error"]["field"] == "tenant"


@pytest.mark.parametrize(
    ("content", "field", "message"),
    [
        (b"{nope", "body", "body: is not valid JSON"),
        (b"", "body", "body: "),
        (
            json.dumps({"query": "aurora", "modality": "ENCYCLOPEDIA", "limit": 3}).encode(),
            "limit",
            "limit: ",
        ),
        (json.dumps({"query": "aurora", "modality": "SPACE"}).encode(), "modality", "modality: "),
        (json.dumps({**BODY, "maxResults": True}).encode(), "maxResults", "maxResults: "),
    ],
)
def test_a_body_the_model_refuses_is_fastapis_422(served, content, field, message):
    client, auth, solved = served
    response = client.post(SEARCH, headers={**auth, "Content-Type": "application/json"}, content=content)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == field and error["message"].startswith(message)
    assert solved[0] > 0  # answered by FastAPI's handler


def test_the_caller_is_still_authenticated_and_its_profile_header_checked(served):
    client, auth, _ = served
    assert client.post(SEARCH, json=BODY).status_code == 401
    assert client.post(SEARCH, headers={"Authorization": "Bearer nope"}, json=BODY).status_code == 401
    bad_profile = client.post(SEARCH, headers={**auth, "Zarniwoop-Profile": "no such profile!"}, json=BODY)
    assert bad_profile.status_code in (400, 422) and "profile" in bad_profile.text.lower()


def test_a_request_only_endpoint_is_its_own_handler_and_one_with_parameters_is_refused():
    from fastapi import APIRouter, Depends
    from starlette.responses import Response

    from zarniwoop.surfaces.http.fast_body import FastBodyRoute, request_only
    from zarniwoop.surfaces.http.routes import gateway

    chat = next(r for r in gateway.router.routes if getattr(r, "path", "") == "/v1/chat/completions")
    assert isinstance(chat, FastBodyRoute)
    assert chat.get_route_handler() is gateway.chat_completions  # no FastAPI request handler between

    router = APIRouter(route_class=FastBodyRoute)

    @request_only
    async def with_query(request: Request, limit: int = 3) -> Response:
        return Response()

    with pytest.raises(TypeError, match="with_query: a request_only endpoint takes the Request alone"):
        router.add_api_route("/q", with_query, methods=["POST"])

    @request_only
    async def with_dependency(request: Request, x: int = Depends(lambda: 1)) -> Response:
        return Response()

    with pytest.raises(TypeError, match="with_dependency"):
        router.add_api_route("/d", with_dependency, methods=["POST"])

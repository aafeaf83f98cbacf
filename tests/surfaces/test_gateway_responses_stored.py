"""`GET` and `DELETE /v1/responses/{response_id}` driven by the real `openai` SDK
(`client.responses.retrieve(id)`, `client.responses.delete(id)`): a stored response comes back as it
was answered (plain and streamed), a deleted one is gone — retrieve and delete are 404s and it
continues nothing, like an id never issued; another account's or another tenant's token gets the
same 404 as an unknown id and leaves the owner's response in place; a malformed id is a 400 naming
`response_id`; where storage is off nothing is there to retrieve."""

from __future__ import annotations

from typing import Any

import pytest

from ..support.responses_gateway import MODELS, Gateway, module_gateway, other_tenant_token

pytestmark = pytest.mark.xdist_group(__name__)

gateway = pytest.fixture(scope="module", name="gateway")(module_gateway)


openai = pytest.importorskip(
    "openai", reason="the gateway tests drive the real openai SDK (pip install openai)"
)

NEVER_ISSUED = "resp_" + "0" * 32


def _created(client: Any, **options: Any) -> dict[str, Any]:
    """The create call's answer as the client received it, JSON."""
    return dict(_create(client, **options).http_response.json())


def _create(client: Any, **options: Any) -> Any:
    return client.responses.with_raw_response.create(
        **{"model": MODELS["anthropic"], "input": "hi", **options}
    )


def _retrieved(client: Any, response_id: str) -> dict[str, Any]:
    return dict(client.responses.with_raw_response.retrieve(response_id).http_response.json())


def _not_found_body(call: Any, response_id: str) -> dict[str, Any]:
    """The 404's error body, the id in its message made generic."""
    with pytest.raises(openai.NotFoundError) as caught:
        call(response_id)
    body = caught.value.body
    assert isinstance(body, dict)
    return {**body, "message": body["message"].replace(response_id, "ID")}


def test_retrieve_answers_the_created_object_and_delete_removes_it(gateway: Gateway) -> None:
    client = gateway.client()
    raw = _create(client, metadata={"ticket": "42"})
    created = raw.http_response.json()
    assert created["store"] is True and created["metadata"] == {"ticket": "42"}
    assert _retrieved(client, created["id"]) == created
    assert client.responses.retrieve(created["id"]).model_dump() == raw.parse().model_dump()

    deleted = client.responses.with_raw_response.delete(created["id"]).http_response
    assert (deleted.status_code, deleted.json()) == (
        200,
        {"id": created["id"], "object": "response.deleted", "deleted": True},
    )
    unknown = _not_found_body(client.responses.retrieve, NEVER_ISSUED)
    assert unknown == {
        "message": "Response with id 'ID' not found.",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    for call in (client.responses.retrieve, client.responses.delete):
        assert _not_found_body(call, created["id"]) == unknown
    refusals = []
    for previous in (created["id"], NEVER_ISSUED):
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.create(model=MODELS["anthropic"], input="go on", previous_response_id=previous)
        body = caught.value.body
        assert isinstance(body, dict)
        refusals.append({**body, "message": body["message"].replace(previous, "ID")})
    assert refusals[0] == refusals[1] and refusals[0]["param"] == "previous_response_id"


def test_a_streamed_response_is_retrieved_as_its_completed_event_said(gateway: Gateway) -> None:
    client = gateway.client()
    events = client.responses.create(model=MODELS["gemini"], input="hi", stream=True)
    [final] = [event.response for event in events if event.type == "response.completed"]
    assert final.status == "completed" and final.store is True
    assert client.responses.retrieve(final.id).model_dump() == final.model_dump()


def test_another_accounts_or_tenants_token_gets_the_404_of_an_unknown_id(gateway: Gateway) -> None:
    owner = gateway.client()
    created = _created(owner, input="My secret is marmalade.")
    others = {
        "another account": gateway.client("zaphod"),
        "another tenant": gateway.openai(other_tenant_token(gateway)),
    }
    for who, client in others.items():
        unknown = _not_found_body(client.responses.retrieve, NEVER_ISSUED)
        for call in (client.responses.retrieve, client.responses.delete):
            answer = _not_found_body(call, created["id"])
            assert answer == unknown and "marmalade" not in str(answer), who
    assert _retrieved(owner, created["id"]) == created  # still there, untouched


@pytest.mark.parametrize(
    "response_id", ["resp_nosuch", "RESP_" + "0" * 32, "resp_" + "g" * 32, "resp_" + "0" * 33, "x' OR 1=1 --"]
)
def test_a_malformed_id_is_a_400_naming_response_id(gateway: Gateway, response_id: str) -> None:
    client = gateway.client()
    for call in (client.responses.retrieve, client.responses.delete):
        with pytest.raises(openai.BadRequestError) as caught:
            call(response_id)
        assert caught.value.body["param"] == "response_id"


def test_a_query_parameter_of_retrieve_is_a_400_naming_it_never_ignored(gateway: Gateway) -> None:
    client = gateway.client()
    response_id = _created(client)["id"]
    asks = {
        "stream": {"stream": True},
        "starting_after": {"starting_after": 3},
        "include": {"include": ["x"]},
    }
    for param, options in asks.items():
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.retrieve(response_id, **options)
        assert caught.value.body["param"] == param
    deleted = gateway.http.delete(
        f"/v1/responses/{response_id}?force=1", headers={"Authorization": f"Bearer {gateway.tokens['main']}"}
    )
    assert (deleted.status_code, deleted.json()["error"]["param"]) == (400, "force")
    assert _retrieved(client, response_id)["id"] == response_id  # refused, so still there


def test_where_storage_is_off_nothing_is_there_to_retrieve(gateway: Gateway) -> None:
    client = gateway.client("nostore")
    created = _created(client)
    assert created["store"] is False
    assert gateway.rows("SELECT id FROM llm_responses WHERE id = ?", created["id"]) == []
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created["id"])


def test_openapi_documents_retrieve_and_delete(gateway: Gateway) -> None:
    document = gateway.http.get("/openapi.json").json()
    path = document["paths"]["/v1/responses/{response_id}"]
    answers = {method: path[method]["responses"]["200"]["content"] for method in ("get", "delete")}
    assert answers == {
        "get": {"application/json": {"schema": {"$ref": "#/components/schemas/ResponsesAnswer"}}},
        "delete": {"application/json": {"schema": {"$ref": "#/components/schemas/ResponsesDeleted"}}},
    }
    [parameter] = path["get"]["parameters"]
    assert (parameter["name"], parameter["in"], parameter["schema"]["pattern"]) == (
        "response_id",
        "path",
        "^resp_[0-9a-f]{32}$",
    )
    assert {"400", "404"} <= set(path["delete"]["responses"])
    assert set(document["components"]["schemas"]["ResponsesDeleted"]["properties"]) == {
        "id",
        "object",
        "deleted",
    }

"""`/openapi.json` is a valid OpenAPI document a tool can use whole (issue 25): openapi-spec-validator
accepts it, every `$ref` resolves among the top-level `components` (the chat-completions request is a
named schema), error media types are what the server sends, `tenant`/`project` carry the name rule,
`OPTIONS` lists every method of a path; schemathesis over every operation with an operator token finds
no server error and no valid request rejected; and a client openapi-python-client generates makes
the chat-completions call."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from zarniwoop.contract.names import NAME_RULE, SYSTEM_TENANT
from zarniwoop.surfaces.http import create_app

from ..support.emulator import Emulator, Reply
from ..support.gateway import MODELS, prepare_gateway, upstream_path
from ..support.runtime import write_config
from ..support.served import served
from ..support.tool_calls import mount_recorded

# its module-scoped server is set up once: the module's tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory = tmp_path_factory.mktemp("openapi")
    app = create_app(config=write_config(directory, {"settings": {}}), home=directory / "home")
    with TestClient(app) as client:
        return dict(client.get("/openapi.json").json())


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def test_openapi_spec_validator_accepts_the_document(document: dict[str, Any]) -> None:
    validator = pytest.importorskip(
        "openapi_spec_validator", reason="openapi-spec-validator is not installed"
    )
    validator.validate(document)  # raises naming the first problem


def test_every_ref_resolves_at_the_top_level_components(document: dict[str, Any]) -> None:
    refs = set(_refs(document))
    assert refs, "the document has references"
    schemas = document["components"]["schemas"]
    outside = sorted(r for r in refs if not r.startswith("#/components/schemas/"))
    assert outside == []
    assert sorted(r for r in refs if r.rsplit("/", 1)[1] not in schemas) == []
    body = document["paths"]["/v1/chat/completions"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": "#/components/schemas/ChatCompletionRequest"}
    request = schemas["ChatCompletionRequest"]
    assert "$defs" not in request
    assert {"model", "messages", "tools", "parallel_tool_calls", "seed", "logprobs", "stop"} <= set(
        request["properties"]
    )


def test_error_media_types_are_what_the_server_sends(document: dict[str, Any]) -> None:
    wrong = [
        (path, method, status, media)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        for status, response in operation.get("responses", {}).items()
        if status[0] in "45"
        for media in response.get("content", {})
        if media != "application/json"
    ]
    assert wrong == []
    investigate = document["paths"]["/v1/research/investigate"]["post"]["responses"]["200"]["content"]
    assert investigate["text/event-stream"] == {"schema": {"type": "string"}}


def test_tenant_and_project_carry_the_name_rule(document: dict[str, Any]) -> None:
    parameters = [
        p
        for operations in document["paths"].values()
        for operation in operations.values()
        for p in operation.get("parameters", [])
        if p["name"] in ("tenant", "project")
    ]
    assert len(parameters) > 10
    for parameter in parameters:
        schema = parameter["schema"]  # pattern and minLength bind the string branch of `anyOf`
        string = next((s for s in schema.get("anyOf", []) if s.get("type") == "string"), schema)
        # the catalog refresh also takes the system level's name (`_system`: every layer)
        rules = (f"^{NAME_RULE}$", f"^({SYSTEM_TENANT}|{NAME_RULE})$")
        assert schema["pattern"] in rules and (string["maxLength"], schema["minLength"]) == (64, 1)


def test_options_lists_every_method_of_a_path(tmp_path: Path, document: dict[str, Any]) -> None:
    app = create_app(config=write_config(tmp_path, {"settings": {}}), home=tmp_path / "home")
    with TestClient(app) as client:
        for path, allow in {
            "/v1/credentials": "GET, OPTIONS, PUT",
            "/v1/settings": "GET, OPTIONS, PUT",
            "/v1/tokens": "GET, OPTIONS, POST",
        }.items():
            answer = client.options(path)  # no token needed: it says nothing of anyone's data
            assert (answer.status_code, answer.headers["allow"]) == (204, allow), path
        for path in (p for p in document["paths"] if "{" not in p):
            assert client.options(path).headers["allow"] == _methods(document, path), path
        wrong_method = client.patch("/v1/settings", headers={"Authorization": "Bearer x"})
        assert wrong_method.status_code in (401, 405)
        unknown = client.patch("/healthz")
        assert unknown.status_code == 405 and unknown.headers["allow"] == "GET, OPTIONS"


def _methods(document: dict[str, Any], path: str) -> str:
    return ", ".join(sorted({m.upper() for m in document["paths"][path]} | {"OPTIONS"}))


SCHEMATHESIS_CONFIG = """
[checks]
enabled = false
not_a_server_error.enabled = true
positive_data_acceptance.enabled = true

# A settings batch's values are checked against what they name (an endpoint id, a protocol, a URL
# the guard accepts, a level the key may live at): no schema states that, so here only
# `not_a_server_error` runs.
[[operations]]
include-path = "/v1/settings"
include-method = "PUT"
checks.positive_data_acceptance.enabled = false

# `by` takes instance|modality with kind=research and project|account|model|provider with kind=llm:
# a rule across two parameters, which OpenAPI cannot state.
[[operations]]
include-path = "/v1/usage/timeseries"
checks.positive_data_acceptance.enabled = false

# `account` goes with `level=account` only: refusing it at `level=tenant` keeps a DELETE that forgot
# the level from deleting the tenant's credential of that name (a rule across two parameters).
[[operations]]
include-path = "/v1/credentials/{name}"
include-method = "DELETE"
checks.positive_data_acceptance.enabled = false

# A search's `page` is a cursor the server signed (any other string is refused naming `page`), and
# `timeRange` excludes `dateFrom`/`dateTo` (issue 47): rules no schema states.
[[operations]]
include-path-regex = "^/v1/research/search(_expert)?$"
checks.positive_data_acceptance.enabled = false

# A URL whose host does not resolve is the documented 502 (the target failed, not the server).
[[operations]]
include-path = "/v1/research/content"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "502"]
"""


@pytest.mark.slow
def test_schemathesis_finds_no_server_error_and_no_valid_request_rejected(tmp_path: Path) -> None:
    binary = shutil.which("schemathesis") or shutil.which("st")
    if binary is None:
        pytest.skip("schemathesis is not installed")
    emulator = Emulator().start()
    try:
        config = write_config(tmp_path, {"settings": mount_recorded(emulator)})
        with served(config, tmp_path / "home") as server:
            assert server.token is not None  # the printed admin token: an operator's
            (tmp_path / "schemathesis.toml").write_text(SCHEMATHESIS_CONFIG)
            command = [
                binary,
                "run",
                f"{server.url}/openapi.json",
                "--phases",
                "examples,fuzzing",
                "--max-examples",
                "8",
                "--workers",
                "1",
                "--request-timeout",
                "30",
                "--suppress-health-check",
                "all",
                "--seed",
                "25",
                "-H",
                f"Authorization: Bearer {server.token}",
                "--report",
                "ndjson",
                "--report-ndjson-path",
                str(tmp_path / "events.ndjson"),
                "--no-color",
            ]
            done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    finally:
        emulator.stop()
    summary = done.stdout[-6000:]
    assert done.returncode == 0, summary
    assert "Server error" not in done.stdout and "API rejected schema-compliant request" not in done.stdout
    # every operation of the document was tested, none left out
    selected = re.search(r"Selected: (\d+)/(\d+)", summary)
    assert selected is not None and selected[1] == selected[2] and int(selected[1]) >= 30, summary
    assert f"Tested: {selected[1]}" in summary and " passed" in summary, summary


@pytest.mark.slow
def test_a_generated_client_makes_the_chat_completions_call(tmp_path: Path) -> None:
    pytest.importorskip("openapi_python_client", reason="openapi-python-client is not installed")
    emulator = Emulator().start()
    try:
        setup = prepare_gateway(tmp_path, emulator)
        emulator.add(
            upstream_path("openai"),
            Reply.json(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 1,
                    "model": "gpt-4o-mini",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "Hello!"},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
                }
            ),
        )
        with served(setup.config, setup.home) as server:
            # a generous budget: the first /openapi.json builds the schema (seconds on a loaded machine)
            document = httpx.get(server.url + "/openapi.json", timeout=120).json()
            (tmp_path / "openapi.json").write_text(json.dumps(document))
            # no post hooks: its default ones format the code it wrote (two shells, two ruffs)
            (tmp_path / "generator.json").write_text(json.dumps({"post_hooks": []}))
            generate = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "openapi_python_client",
                    "generate",
                    "--path",
                    "openapi.json",
                    "--config",
                    "generator.json",
                    "--meta",
                    "none",
                    "--output-path",
                    "gen",
                ],
                capture_output=True,
                text=True,
                timeout=300,
                cwd=tmp_path,
            )
            assert generate.returncode == 0, generate.stdout[-2000:] + generate.stderr[-2000:]
            assert "chat_completions" in {
                p.stem.split("_v1")[0] for p in (tmp_path / "gen").rglob("*.py")
            } or any("chat_completions" in p.name for p in (tmp_path / "gen").rglob("*.py")), (
                "the generator skipped the chat-completions operation"
            )
            script = CALL.format(url=server.url, token=setup.token, model=MODELS["openai"])
            call = subprocess.run(
                [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path
            )
        assert call.returncode == 0, call.stderr[-3000:]
        assert json.loads(call.stdout) == {"status": 200, "content": "Hello!", "typed_request": True}
        [upstream] = emulator.requests(upstream_path("openai"))
        assert upstream.json()["messages"] == [{"role": "user", "content": "hi"}]
    finally:
        emulator.stop()


CALL = """
import json, sys
import httpx
sys.path.insert(0, "gen")
from gen import AuthenticatedClient
from gen.api.gateway import chat_completions_v1_chat_completions_post as chat
from gen.models import ChatCompletionRequest
request = ChatCompletionRequest.from_dict({{"model": "{model}", "messages": [{{"role": "user", "content": "hi"}}]}})
client = AuthenticatedClient(base_url="{url}", token="{token}", timeout=httpx.Timeout(120))
answer = chat.sync_detailed(client=client, body=request)
body = json.loads(answer.content)
print(json.dumps({{"status": int(answer.status_code), "content": body["choices"][0]["message"]["content"],
                   "typed_request": isinstance(request, ChatCompletionRequest)}}))
"""

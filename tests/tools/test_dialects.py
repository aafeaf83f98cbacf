"""Every dialect's definitions follow that API's documented rules, checked by our rule lists and by
the APIs' own third-party code where it is installed (pydantic-ai's transformers, google-genai's
`FunctionDeclaration`, the openai SDK's and the Agents SDK's strict-schema functions).

The third-party checks skip, saying which package is missing, where it is not installed; the
`test` extra installs all of them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest
from typer.testing import CliRunner

import zarniwoop
from zarniwoop.contract import InvalidRequestError
from zarniwoop.surfaces.cli import app
from zarniwoop.tools import TOOL_NAMES, TOOLS, parse_arguments, tool_spec
from zarniwoop.tools.dialects import DIALECTS, tools_document

OPENAI_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}


def nodes(schema: Any) -> Iterator[dict[str, Any]]:
    """Every schema node (not the property-name maps themselves)."""
    if isinstance(schema, dict):
        yield schema
        for key, value in schema.items():
            if key == "properties":
                for prop in value.values():
                    yield from nodes(prop)
            elif isinstance(value, (dict, list)):
                yield from nodes(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from nodes(item)


def openai_parameters() -> list[dict[str, Any]]:
    return [d["function"]["parameters"] for d in zarniwoop.tool_definitions("openai")]


def gemini_parameters() -> list[dict[str, Any]]:
    return [d["parameters"] for d in zarniwoop.tool_definitions("gemini") if "parameters" in d]


def test_documents_have_each_apis_envelope():
    openai = tools_document("openai")["tools"]
    assert [t["type"] for t in openai] == ["function"] * 5
    assert all(set(t["function"]) == {"name", "description", "parameters", "strict"} for t in openai)
    assert all(t["function"]["strict"] is True for t in openai)
    anthropic = tools_document("anthropic")["tools"]
    assert all(set(t) == {"name", "description", "input_schema"} for t in anthropic)
    (gemini,) = tools_document("gemini")["tools"]
    assert [d["name"] for d in gemini["functionDeclarations"]] == list(TOOL_NAMES)
    mcp = tools_document("mcp")["tools"]
    assert all(
        set(t) == {"name", "title", "description", "inputSchema", "outputSchema", "annotations"} for t in mcp
    )
    assert [t["inputSchema"] for t in mcp] == [s.input_schema for s in TOOLS]
    assert [t["input_schema"] for t in anthropic] == [s.input_schema for s in TOOLS]


def test_openai_strict_rules():
    for parameters in openai_parameters():
        for node in nodes(parameters):
            assert not {"default", "minLength", "maxLength", "title"} & set(node), node
            if "format" in node:
                assert node["format"] in OPENAI_FORMATS
            if node.get("type") == "object":
                assert node["additionalProperties"] is False
                assert node["required"] == list(node["properties"])
    expert = openai_parameters()[1]["properties"]
    assert expert["site"]["type"] == ["string", "null"]  # optional: nullable, yet in `required`
    assert expert["dateFrom"] == {
        "type": ["string", "null"],
        "format": "date",
        "description": "Earliest publication date (ISO, YYYY-MM-DD).",
    }
    assert openai_parameters()[4] == {
        "additionalProperties": False,
        "description": "Takes no parameters.",
        "properties": {},
        "required": [],
        "type": "object",
    }


def test_gemini_openapi_subset_rules():
    for parameters in gemini_parameters():
        for node in nodes(parameters):
            assert not {"additionalProperties", "$ref", "$defs", "default", "title", "anyOf"} & set(node), (
                node
            )
            if "type" in node:
                assert isinstance(node["type"], str), node
            if "format" in node:
                assert node["format"] in {"enum", "date-time"}
            assert None not in node.get("enum", [])
    search = gemini_parameters()[0]["properties"]
    assert search["maxResults"]["nullable"] is True and search["maxResults"]["type"] == "integer"
    assert "nullable" not in search["query"]
    assert (
        "format" not in gemini_parameters()[1]["properties"]["dateFrom"]
    )  # `date` is not in Gemini's subset
    assert "parameters" not in zarniwoop.tool_definitions("gemini")[4]  # Gemini refuses an empty object


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        (
            "research_search",
            {"query": "x" * 2001, "modality": "web"},
            "query: must be at most 2000 characters",
        ),
        (
            "research_search_expert",
            {"query": "q", "modality": "web", "maxResults": 3, "site": "s" * 201},
            "site",
        ),
        (
            "research_search_expert",
            {"query": "q", "modality": "web", "maxResults": 3, "dateFrom": "yesterday"},
            "dateFrom: input should be a valid date",
        ),
        ("research_search", {"query": "", "modality": "web"}, "query: must not be empty"),
    ],
)
def test_limits_a_dialect_loses_are_enforced_with_the_one_line_error(name, arguments, message):
    """`maxLength`, `minLength` (OpenAI) and `format: date` (Gemini) are gone from those schemas,
    not from the validation every surface runs."""
    with pytest.raises(InvalidRequestError) as refused:
        parse_arguments(tool_spec(name), arguments)
    assert refused.value.message.startswith(message)
    assert "\n" not in refused.value.message


@pytest.mark.parametrize("dialect", DIALECTS)
def test_cli_prints_the_same_document(dialect):
    result = CliRunner().invoke(app, ["tools", "list", "--json", "--dialect", dialect])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == tools_document(dialect)


def test_cli_refuses_an_unknown_dialect_naming_the_option():
    result = CliRunner().invoke(app, ["tools", "list", "--json", "--dialect", "cohere"])
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == "error: dialect: expected one of mcp, openai, anthropic, gemini, got 'cohere'"
    )


# --- the APIs' own code --------------------------------------------------------------------------


def test_pydantic_ai_openai_transformer_needs_no_change_and_finds_it_strict_compatible():
    openai_profile = pytest.importorskip(
        "pydantic_ai.profiles.openai", reason="pydantic-ai-slim is not installed"
    )
    for parameters in openai_parameters():
        transformer = openai_profile.OpenAIJsonSchemaTransformer(copy.deepcopy(parameters), strict=None)
        assert transformer.walk() == parameters
        assert transformer.is_strict_compatible is True
    # the check can fail: the canonical MCP schema (defaults, lengths) is not strict-compatible
    canonical = tool_spec("research_search").input_schema
    transformer = openai_profile.OpenAIJsonSchemaTransformer(copy.deepcopy(canonical), strict=None)
    transformer.walk()
    assert transformer.is_strict_compatible is False


def test_pydantic_ai_gemini_transformer_needs_no_change():
    google = pytest.importorskip("pydantic_ai.profiles.google", reason="pydantic-ai-slim is not installed")
    for parameters in gemini_parameters():
        assert google.GoogleOpenAPISchemaTransformer(copy.deepcopy(parameters)).walk() == parameters
    canonical = tool_spec("research_search_expert").input_schema
    assert google.GoogleOpenAPISchemaTransformer(copy.deepcopy(canonical)).walk() != canonical


def test_google_genai_function_declaration_accepts_every_gemini_declaration():
    types = pytest.importorskip("google.genai.types", reason="google-genai is not installed")
    for declaration in zarniwoop.tool_definitions("gemini"):
        parsed = types.FunctionDeclaration.model_validate(declaration)
        assert parsed.name == declaration["name"]
        if "parameters" in declaration:
            assert list(parsed.parameters.properties) == list(declaration["parameters"]["properties"])
            assert parsed.parameters.required == declaration["parameters"]["required"]
    search = types.FunctionDeclaration.model_validate(zarniwoop.tool_definitions("gemini")[0])
    assert search.parameters.properties["maxResults"].nullable is True
    # the check can fail: the canonical schema's `type` lists are refused. Asserted on pydantic's
    # structured errors (where, and which value), not on google-genai's wording, which changes —
    # nor on how it refuses: google-genai 2.34 under pydantic 2.14 raises AttributeError from its
    # enum parser instead (found by .ci/run's fresh resolution, issue 24)
    with pytest.raises((pydantic.ValidationError, AttributeError)) as refused:
        types.FunctionDeclaration.model_validate(
            {"name": "research_search", "parameters": tool_spec("research_search").input_schema}
        )
    if isinstance(refused.value, pydantic.ValidationError):
        assert {
            (error["loc"][-2], repr(error["input"]))
            for error in refused.value.errors()
            if error["loc"][-1] == "type" and "maxResults" in error["loc"]
        } == {("maxResults", repr(["integer", "null"]))}


def test_openai_sdk_strict_schema_function_changes_nothing():
    strict = pytest.importorskip("openai.lib._pydantic", reason="openai is not installed")
    for parameters in openai_parameters():
        copied = copy.deepcopy(parameters)
        assert strict._ensure_strict_json_schema(copied, path=(), root=copied) == parameters


def test_agents_sdk_strict_conversion_changes_nothing():
    agents_strict = pytest.importorskip("agents.strict_schema", reason="openai-agents is not installed")
    for parameters in openai_parameters():
        assert agents_strict.ensure_strict_json_schema(copy.deepcopy(parameters)) == parameters
    # from the MCP schema, the conversion keeps optional parameters nullable: a strict model may say null
    converted = agents_strict.ensure_strict_json_schema(tool_spec("research_search_expert").input_schema)
    assert converted["required"] == list(converted["properties"])
    assert converted["properties"]["pinnedProviderId"]["type"] == ["string", "null"]

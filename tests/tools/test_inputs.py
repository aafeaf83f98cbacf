"""One schema per tool, generated from the contract; bad arguments name the field, for every tool."""

from __future__ import annotations

import pytest

from zarniwoop.contract import InvalidRequestError, Modality
from zarniwoop.contract.query import MAX_QUERY_CHARS, MAX_RESULTS_LIMIT
from zarniwoop.tools import TOOL_NAMES, TOOLS, parse_arguments, tool_spec

MB_QUERY = "x" * (1024 * 1024)
VALID = {
    "research_search": {"query": "crispr", "modality": "ACADEMIC"},
    "research_search_expert": {"query": "crispr", "modality": "ACADEMIC", "maxResults": 5},
    "research_rich": {"query": "aurora", "maxResults": 3},
    "research_investigate": {"question": "does crispr cut off target?"},
    "research_providers": {},
}
TEXT_FIELD = {"research_investigate": "question"}


def invalid(name: str, arguments: object) -> InvalidRequestError:
    with pytest.raises(InvalidRequestError) as caught:
        parse_arguments(tool_spec(name), arguments)
    return caught.value


def test_exactly_five_tools_modality_is_a_parameter_never_a_tool():
    assert TOOL_NAMES == (
        "research_search",
        "research_search_expert",
        "research_rich",
        "research_investigate",
        "research_providers",
    )
    for spec in TOOLS:
        assert not any(m.value.lower() in spec.name for m in Modality)


def test_search_schema_follows_the_contract():
    schema = tool_spec("research_search").input_schema
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == ["query", "modality", "maxResults", "locale", "profile", *FILTERS]
    assert schema["required"] == ["query", "modality"]
    assert schema["properties"]["modality"]["enum"] == [m.value for m in Modality]  # from the contract enum
    assert schema["properties"]["query"]["maxLength"] == MAX_QUERY_CHARS
    assert schema["properties"]["maxResults"] == {
        "default": 10,
        "description": f"Maximum number of hits (1–{MAX_RESULTS_LIMIT}).",
        "maximum": MAX_RESULTS_LIMIT,
        "minimum": 1,
        "type": ["integer", "null"],  # optional: `null` means "not given", so a strict converter works
    }
    assert schema["properties"]["locale"]["type"] == ["string", "null"]
    assert schema["properties"]["profile"]["type"] == ["string", "null"]  # optional, nullable (tools12)
    assert schema["properties"]["query"]["type"] == "string"  # required: never null
    assert "$defs" not in schema and "$ref" not in str(schema)


FILTERS = ("includeDomains", "excludeDomains", "timeRange", "safeSearch", "region", "page", "strictFilters")
"""Issue 47's filters, after each search tool's own parameters."""


def test_expert_rich_investigate_providers_schemas():
    expert = tool_spec("research_search_expert").input_schema
    assert list(expert["properties"]) == [
        "query",
        "modality",
        "maxResults",
        "site",
        "filetype",
        "dateFrom",
        "dateTo",
        "domain",
        "language",
        "pinnedProviderId",
        "profile",
        *FILTERS,
    ]
    assert expert["required"] == ["query", "modality", "maxResults"]
    assert expert["properties"]["timeRange"] == {
        "type": ["string", "null"],
        "enum": ["day", "week", "month", "year", None],
        "description": "Only results from the last day, week, month or year.",
    }
    assert expert["properties"]["excludeDomains"]["type"] == ["array", "null"]
    assert expert["properties"]["dateFrom"] == {
        "type": ["string", "null"],
        "format": "date",
        "description": "Earliest publication date (ISO, YYYY-MM-DD).",
    }
    rich = tool_spec("research_rich").input_schema
    assert list(rich["properties"]) == ["query", "maxResults", "profile"] and rich["required"] == [
        "query",
        "maxResults",
    ]
    investigate = tool_spec("research_investigate").input_schema
    assert list(investigate["properties"]) == ["question", "maxResults", "depth", "profile", "insights"]
    assert "boolean" in investigate["properties"]["insights"]["type"]
    assert investigate["required"] == ["question"]
    assert tool_spec("research_providers").input_schema["properties"] == {}
    assert tool_spec("research_providers").input_schema["required"] == []


def test_definition_is_the_mcp_tool_shape():
    definition = tool_spec("research_rich").definition()
    assert set(definition) == {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}
    assert definition["inputSchema"] == tool_spec("research_rich").input_schema
    assert definition["outputSchema"]["required"] == ["query", "results"]
    assert definition["annotations"] == {
        "title": "Rich search",
        "readOnlyHint": True,
        "destructiveHint": False,
        "openWorldHint": True,
    }


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_null_for_every_optional_parameter_means_not_given(name):
    schema = tool_spec(name).input_schema
    optional = [p for p in schema["properties"] if p not in schema["required"]]
    parsed = parse_arguments(tool_spec(name), {**VALID[name], **dict.fromkeys(optional)})
    assert parsed == parse_arguments(tool_spec(name), VALID[name])
    if name == "research_search":
        assert parsed.max_results == 10  # the default applies


def test_null_for_a_required_parameter_is_missing():
    error = invalid("research_search", {"query": None, "modality": "web"})
    assert (error.field, error.reason) == ("query", "is required")


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_valid_arguments_parse(name):
    parsed = parse_arguments(tool_spec(name), VALID[name])
    assert parsed is not None


def test_modality_any_case_and_snake_case_names_accepted():
    args = parse_arguments(
        tool_spec("research_search"), {"query": " q ", "modality": "academic", "max_results": 3}
    )
    assert (args.query, args.modality, args.max_results) == ("q", Modality.ACADEMIC, 3)


@pytest.mark.parametrize("name", ["research_search", "research_search_expert"])
def test_unknown_modality_lists_the_valid_ones(name):
    error = invalid(name, {**VALID[name], "modality": "podcasts"})
    assert error.field == "modality"
    assert error.reason == (
        "expected one of WEB, IMAGE, VIDEO, PDF, NEWS, ACADEMIC, ENCYCLOPEDIA, BOOK, MAP, CODE, "
        "INTERNAL_DOC, RAG, got 'PODCASTS'"
    )


@pytest.mark.parametrize("name", [n for n in TOOL_NAMES if n != "research_providers"])
def test_missing_query_names_the_field(name):
    field = TEXT_FIELD.get(name, "query")
    arguments = {k: v for k, v in VALID[name].items() if k != field}
    error = invalid(name, arguments)
    assert (error.field, error.reason) == (field, "is required")


@pytest.mark.parametrize("name", [n for n in TOOL_NAMES if n != "research_providers"])
def test_one_megabyte_query_is_refused_naming_the_field_without_echoing_it(name):
    field = TEXT_FIELD.get(name, "query")
    error = invalid(name, {**VALID[name], field: MB_QUERY})
    assert error.field == field
    assert error.reason == f"must be at most {MAX_QUERY_CHARS} characters, got {len(MB_QUERY)}"
    assert len(error.message) < 200


@pytest.mark.parametrize("name", [n for n in TOOL_NAMES if n != "research_providers"])
@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("ten", "input should be a valid integer, unable to parse string as an integer"),
        (True, "must be an integer, got a boolean"),
        (0, "input should be greater than or equal to 1"),
        (MAX_RESULTS_LIMIT + 1, f"input should be less than or equal to {MAX_RESULTS_LIMIT}"),
        (2.5, "input should be a valid integer, got a number with a fractional part"),
    ],
)
def test_wrong_max_results_names_the_field(name, value, reason):
    error = invalid(name, {**VALID[name], "maxResults": value})
    assert (error.field, error.reason) == ("maxResults", reason)


@pytest.mark.parametrize("name", [n for n in TOOL_NAMES if n != "research_providers"])
def test_query_of_the_wrong_type(name):
    field = TEXT_FIELD.get(name, "query")
    error = invalid(name, {**VALID[name], field: 42})
    assert (error.field, error.reason) == (field, "input should be a valid string")


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_unknown_parameter_is_refused_listing_the_known_ones(name):
    error = invalid(name, {**VALID[name], "limit": 3})
    known = list(tool_spec(name).input_schema["properties"])
    assert error.field == "limit"
    assert error.reason == (
        f"unknown parameter; expected one of {', '.join(known)}" if known else "unknown parameter; none taken"
    )


@pytest.mark.parametrize("name", TOOL_NAMES)
@pytest.mark.parametrize("arguments", [[1, 2], "query=x", 7])
def test_arguments_must_be_an_object(name, arguments):
    error = invalid(name, arguments)
    assert error.field == "arguments"
    assert error.reason.startswith("must be a JSON object, got ")


def test_expert_parameters_are_checked():
    base = VALID["research_search_expert"]
    assert invalid("research_search_expert", {**base, "dateFrom": "2024-13-01"}).field == "dateFrom"
    assert invalid("research_search_expert", {**base, "filetype": "p d f"}).field == "filetype"
    assert invalid("research_search_expert", {**base, "language": "english!"}).field == "language"
    args = parse_arguments(
        tool_spec("research_search_expert"),
        {**base, "site": "arxiv.org", "dateFrom": "2024-01-01", "filetype": "pdf"},
    )
    assert args.expert_params() == {"site": "arxiv.org", "dateFrom": "2024-01-01", "filetype": "pdf"}


def test_investigate_depth_bounds():
    assert invalid("research_investigate", {"question": "q", "depth": 9}).field == "depth"
    assert invalid("research_investigate", {"question": "q", "depth": "deep"}).field == "depth"
    assert invalid("research_investigate", {"question": "q", "insights": "maybe"}).field == "insights"


def test_no_tool_schema_offers_per_call_overrides():
    # Overrides are for trusted callers (Python API, admin HTTP); a model must never see or send them.
    for name in ("research_search", "research_search_expert", "research_rich", "research_investigate"):
        assert "overrides" not in tool_spec(name).input_schema["properties"]
    assert invalid("research_search", {"query": "q", "modality": "web", "overrides": {}}).field == "overrides"


def test_unknown_tool_name_lists_the_tools():
    with pytest.raises(InvalidRequestError) as caught:
        tool_spec("research_images")
    assert caught.value.field == "name"
    assert caught.value.reason == f"unknown tool 'research_images'; expected one of {', '.join(TOOL_NAMES)}"

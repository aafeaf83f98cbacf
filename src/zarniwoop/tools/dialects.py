"""The five tool definitions in each function-calling API's own shape, derived from the one schema.

    tool_definitions("openai")   # [{"type": "function", "function": {name, description, parameters, strict}}]
    tools_document("gemini")     # {"tools": [{"functionDeclarations": [{name, description, parameters}]}]}

`mcp` is the canonical form (`ToolSpec.definition()`: JSON Schema 2020-12, optional parameters
nullable, plus `outputSchema` and `annotations`); `anthropic` takes it unchanged as `input_schema`.
The other two follow their API's documented subset:

- `openai` — Structured Outputs strict mode: every object `additionalProperties: false` with every
  property in `required` (optional ones stay nullable, so `null` means "not given"); no `default`,
  `minLength`, `maxLength`, `title`; string `format` only from OpenAI's list.
- `gemini` — the OpenAPI 3.0 subset of a function declaration's `parameters`: one `type` per node with
  `nullable: true`, no `additionalProperties`, `$ref`, `default`; string `format` only `enum` or
  `date-time`; a tool without parameters has no `parameters` (Gemini refuses an empty object).

A limit that a dialect cannot express (a length, a default, `format: date`) is still enforced by the
input model on every surface, with the same one-line error naming the field; the description keeps
saying what the value must look like.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..contract.errors import InvalidRequestError

if TYPE_CHECKING:
    from .base import ToolSpec

Dialect = Literal["mcp", "openai", "anthropic", "gemini"]
DIALECTS: tuple[str, ...] = get_args(Dialect)

OPENAI_STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
"""String formats OpenAI strict mode supports (Structured Outputs, "Supported properties")."""
OPENAI_DROPPED = frozenset({"default", "minLength", "maxLength", "title", "$schema"})
GEMINI_STRING_FORMATS = frozenset({"enum", "date-time"})
GEMINI_DROPPED = frozenset({"additionalProperties", "default", "title", "$schema", "$ref", "$defs"})


def check_dialect(dialect: str) -> Dialect:
    if dialect not in DIALECTS:
        raise InvalidRequestError("dialect", f"expected one of {', '.join(DIALECTS)}, got {dialect!r}")
    return dialect  # type: ignore[return-value]  # checked against the Literal's values just above


def tool_definitions(
    dialect: str = "mcp", specs: Sequence[ToolSpec[Any]] | None = None
) -> list[dict[str, Any]]:
    """The tools as a list in `dialect`'s shape: what goes into that API's `tools` (Gemini: its
    `functionDeclarations`). Raises `InvalidRequestError("dialect", …)` for an unknown dialect.

        client.chat.completions.create(model=…, messages=…, tools=zarniwoop.tool_definitions("openai"))
    """
    if specs is None:
        from .registry import TOOLS

        specs = TOOLS
    return [_SHAPES[check_dialect(dialect)](spec) for spec in specs]


def tools_document(dialect: str = "mcp", specs: Sequence[ToolSpec[Any]] | None = None) -> dict[str, Any]:
    """`{"tools": …}` as `tools list --json --dialect` and `GET /v1/tools?dialect=` print it."""
    definitions = tool_definitions(dialect, specs)
    if dialect == "gemini":
        return {"tools": [{"functionDeclarations": definitions}]}
    return {"tools": definitions}


def openai_schema(node: Any) -> Any:
    """A JSON schema rewritten for OpenAI strict mode (see the module docstring)."""
    return _rewritten(node, OPENAI_DROPPED, OPENAI_STRING_FORMATS, _openai_strict)


def gemini_schema(node: Any) -> Any:
    """A JSON schema rewritten into Gemini's OpenAPI subset (see the module docstring)."""
    return _rewritten(node, GEMINI_DROPPED, GEMINI_STRING_FORMATS, _gemini_nullable)


def _rewritten(
    node: Any, dropped: frozenset[str], formats: frozenset[str], amend: Callable[[dict[str, Any]], None]
) -> Any:
    """`node` without the keywords and string formats a dialect lacks, each schema object in it
    amended to the dialect's rules by `amend`."""
    if isinstance(node, list):
        return [_rewritten(v, dropped, formats, amend) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in dropped or (key == "format" and value not in formats):
            continue
        if key == "properties":
            out[key] = {k: _rewritten(v, dropped, formats, amend) for k, v in value.items()}
        else:
            out[key] = _rewritten(value, dropped, formats, amend)
    amend(out)
    return out


def _openai_strict(out: dict[str, Any]) -> None:
    if out.get("type") == "object":
        out.setdefault("properties", {})
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False


def _gemini_nullable(out: dict[str, Any]) -> None:
    kind = out.get("type")
    if isinstance(kind, list):
        (single,) = [k for k in kind if k != "null"]
        out["type"] = single
        if "null" in kind:
            out["nullable"] = True
    if isinstance(out.get("enum"), list) and None in out["enum"]:
        out["enum"] = [v for v in out["enum"] if v is not None]
        out["nullable"] = True


def _mcp(spec: ToolSpec[Any]) -> dict[str, Any]:
    return spec.definition()


def _openai(spec: ToolSpec[Any]) -> dict[str, Any]:
    function = {
        "name": spec.name,
        "description": spec.description,
        "parameters": openai_schema(spec.input_schema),
        "strict": True,
    }
    return {"type": "function", "function": function}


def _anthropic(spec: ToolSpec[Any]) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}


def _gemini(spec: ToolSpec[Any]) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": spec.name, "description": spec.description}
    parameters = gemini_schema(spec.input_schema)
    if parameters.get("properties"):
        declaration["parameters"] = parameters
    return declaration


_SHAPES: Mapping[str, Callable[[ToolSpec[Any]], dict[str, Any]]] = {
    "mcp": _mcp,
    "openai": _openai,
    "anthropic": _anthropic,
    "gemini": _gemini,
}

__all__ = [
    "DIALECTS",
    "Dialect",
    "check_dialect",
    "gemini_schema",
    "openai_schema",
    "tool_definitions",
    "tools_document",
]

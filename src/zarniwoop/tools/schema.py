"""From input models to published JSON schemas, and from pydantic errors to one error naming the field.

`input_schema(Model)` is what every surface publishes: pydantic's schema by alias, with the
`$defs` inlined (the `Modality` enum appears in place, where tool hosts look for it), the
auto-generated titles dropped, `required` always present, and every optional parameter nullable
(`"type": ["integer", "null"]`): leaving it out and passing `null` both mean "not given", so a
strict converter that marks every parameter required (OpenAI strict mode, the Agents SDK) still
lets a model leave it unset. `tools.dialects` derives the other APIs' shapes from this one.

`to_invalid_request(exc)` turns a `ValidationError` (or FastAPI's `RequestValidationError`
errors) into `InvalidRequestError(field, reason)` for the first problem, in words a caller can
act on, and never echoes the offending value at length (a 1 MB query stays out of the reply).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from pydantic import BaseModel

from ..contract.errors import InvalidRequestError

_MAX_ECHO = 60


@cache
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    schema = _clean_object(_inline_object(raw, defs))
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    schema["type"] = "object"
    if model.__doc__:
        schema["description"] = " ".join(model.__doc__.split())
    return schema


def nullable_optionals(schema: dict[str, Any]) -> None:
    """Make every optional property of a model's schema nullable, in place (`json_schema_extra`).

    pydantic writes `anyOf [X, null]` for `X | None` and plain `X` for a defaulted `X`; both become
    `X` with `"type": [X, "null"]`, so the input models' own schema (FastAPI's OpenAPI bodies too)
    says what they accept: `null` for "not given".
    """
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    for name, prop in properties.items():
        if name not in required:
            properties[name] = nullable(_clean_object(prop, in_properties=False))


def nullable(node: Mapping[str, Any]) -> dict[str, Any]:
    """`node` also accepting `null`: `"type": [X, "null"]` (and `null` among an `enum`'s values)."""
    out = dict(node)
    kind = out.pop("type", None)
    if isinstance(kind, str):
        out = {"type": [kind, "null"], **out}
    elif isinstance(kind, list):
        out = {"type": [*kind, *(["null"] if "null" not in kind else [])], **out}
    if isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The published JSON schema of a tool's input model (a fresh copy each call)."""
    return copy.deepcopy(_schema(model))


def _inline(node: Any, defs: Mapping[str, Any]) -> Any:
    if isinstance(node, dict):
        return _inline_object(node, defs)
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def _inline_object(node: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = dict(defs[ref.removeprefix("#/$defs/")])
        target.update({k: v for k, v in node.items() if k != "$ref"})
        return _inline_object(target, defs)
    return {k: _inline(v, defs) for k, v in node.items()}


def _clean(node: Any, *, in_properties: bool = False, collapse_null: bool = True) -> Any:
    if isinstance(node, list):
        return [_clean(v, collapse_null=collapse_null) for v in node]
    if not isinstance(node, dict):
        return node
    return _clean_object(node, in_properties=in_properties, collapse_null=collapse_null)


def _clean_object(
    node: Mapping[str, Any], *, in_properties: bool = False, collapse_null: bool = True
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and not in_properties:
            continue
        out[key] = _clean(value, in_properties=(key == "properties"), collapse_null=collapse_null)
    if in_properties or not collapse_null:
        return out
    variants = out.get("anyOf")
    if isinstance(variants, list) and len(variants) == 2 and {"type": "null"} in variants:
        (kept,) = [v for v in variants if v != {"type": "null"}]
        out.pop("anyOf")
        out = {**kept, **out}
        if out.get("default", ...) is None:
            out.pop("default")
    return out


def inline_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A pydantic schema with its `$defs` inlined and the generated titles dropped, nulls kept as they are."""
    raw = dict(schema)
    defs = raw.pop("$defs", {})
    return _clean_object(_inline_object(raw, defs), collapse_null=False)


def model_fields(model: type[BaseModel]) -> list[str]:
    """The wire names of a model's parameters, in declaration order."""
    return [info.alias or name for name, info in model.model_fields.items()]


def to_invalid_request(
    errors: Sequence[Mapping[str, Any]], model: type[BaseModel] | None = None, *, strip: Iterable[str] = ()
) -> InvalidRequestError:
    """The first validation problem as `InvalidRequestError(field, reason)`.

    Args:
        errors: `ValidationError.errors()` or FastAPI's `RequestValidationError.errors()`.
        model: the input model, to list its parameters when an unknown one was passed.
        strip: leading location parts that are not field names (FastAPI's `body`).
    """
    if not errors:
        return InvalidRequestError("arguments", "invalid")
    first = errors[0]
    loc = [str(part) for part in first.get("loc", ())]
    if first.get("type") == "json_invalid":
        loc = loc[:1]  # FastAPI puts the character offset after `body`
    skip = set(strip)
    while len(loc) > 1 and loc[0] in skip:  # `body.query` → `query`, but a bad `body` stays `body`
        loc = loc[1:]
    field = ".".join(loc) or "arguments"
    return InvalidRequestError(field, _reason(first, model))


def _reason(error: Mapping[str, Any], model: type[BaseModel] | None) -> str:
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    value = error.get("input")
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        if model is None:
            return "unknown parameter"
        known = model_fields(model)
        return (
            f"unknown parameter; expected one of {', '.join(known)}"
            if known
            else "unknown parameter; none taken"
        )
    if kind == "enum":
        expected = str(ctx.get("expected", "")).replace("'", "")
        return f"expected one of {expected.replace(' or ', ', ')}, got {_echo(value)}"
    if kind == "string_too_long":
        got = f", got {len(value)}" if isinstance(value, str) else ""
        return f"must be at most {ctx.get('max_length')} characters{got}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "json_invalid":
        return f"is not valid JSON ({ctx.get('error', 'parse error')})"
    if kind in ("model_attributes_type", "dict_type", "model_type"):
        return "must be a JSON object"
    message = str(error.get("msg", "invalid"))
    message = message.removeprefix("Value error, ")
    return message[:1].lower() + message[1:]


def _echo(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_ECHO else text[:_MAX_ECHO] + "…"


__all__ = [
    "inline_refs",
    "input_schema",
    "model_fields",
    "nullable",
    "nullable_optionals",
    "to_invalid_request",
]

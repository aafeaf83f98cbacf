"""The JSON of a record whose every field is a plain value: each field under its camelCase name
(`updated_at` → `updatedAt`), in field order — the wire's spelling everywhere (DESIGN §3)."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_KEYS: dict[type[DataclassInstance], tuple[tuple[str, str], ...]] = {}
"""(field, JSON key) of each record class, found once."""


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def camel_json(record: DataclassInstance) -> dict[str, Any]:
    """`record`'s dataclass fields by their camelCase names."""
    cls = type(record)
    keys = _KEYS.get(cls)
    if keys is None:
        keys = _KEYS[cls] = tuple((f.name, camel(f.name)) for f in fields(cls))
    return {key: getattr(record, name) for name, key in keys}

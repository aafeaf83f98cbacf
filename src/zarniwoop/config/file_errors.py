"""A config file's errors in the project's words (issue 46): every bad value, the key a misspelt one
probably meant, what a URL field expects — never a library's regex or exception class."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

from .known_keys import nearest_word

PROXY_URL = r"^(https?|socks5h?)://\S+$"
HTTP_URL = r"^https?://\S+$"
PLAIN_HTTP_URL = r"^https?://[^\s#?]+$"
_PATTERN_WORDS = {
    PROXY_URL: "expected a proxy URL: http://, https://, socks5:// or socks5h:// and a host",
    HTTP_URL: "expected an http:// or https:// URL",
    PLAIN_HTTP_URL: "expected an http:// or https:// URL with no query or fragment",
}
"""What a value that misses one of these patterns is told, instead of the pattern itself."""


def problem(error: Any, root: type[BaseModel]) -> tuple[str, str]:
    """One pydantic error as `(key, reason)` in the project's words: the key it meant for an unknown
    one, what was expected for a pattern (never the regex); `root`: the file's model."""
    location = ".".join(str(part) for part in error["loc"]) or "(top level)"
    if error["type"] == "extra_forbidden":
        return location, _unknown_key_reason(error["loc"], root)
    if error["type"] == "string_pattern_mismatch":
        return location, _PATTERN_WORDS.get(error["ctx"]["pattern"], "is not in the expected form")
    return location, str(error["msg"]).removeprefix("Value error, ")


_LOADER_FIELDS = frozenset({"path", "notes"})
"""Fields the loader fills in, never written in a file: not offered as a suggestion."""


def _unknown_key_reason(loc: tuple[int | str, ...], root: type[BaseModel]) -> str:
    """A key the file's section does not have, with the one it probably meant (`setting` → `settings`),
    as `settings set` says of a misspelt setting."""
    model = _model_at(loc[:-1], root)
    names = [f.alias or n for n, f in model.model_fields.items() if n not in _LOADER_FIELDS] if model else []
    near = nearest_word(str(loc[-1]), names)
    return (
        f"is not a known key; did you mean {near}?"
        if near
        else f"is not a known key; expected {', '.join(names)}"
    )


def _model_at(loc: tuple[int | str, ...], root: type[BaseModel]) -> type[BaseModel] | None:
    """The section of the file model that `loc` (a pydantic error's location) points into."""
    node: Any = root
    for part in loc:
        node = _optional_of(node)
        if isinstance(node, type) and issubclass(node, BaseModel):
            field = next((f for n, f in node.model_fields.items() if part in (n, f.alias)), None)
            if field is None:
                return None
            node = field.annotation
        elif typing.get_origin(node) in (dict, list):  # `part` is a tenant's name or a list index
            node = typing.get_args(node)[-1]
        else:
            return None
    node = _optional_of(node)
    return node if isinstance(node, type) and issubclass(node, BaseModel) else None


def _optional_of(node: Any) -> Any:
    if typing.get_origin(node) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(node) if a is not type(None)]
        return inner[0] if len(inner) == 1 else node
    return node

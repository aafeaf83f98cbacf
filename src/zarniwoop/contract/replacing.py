"""Cheaper construction and `dataclasses.replace` for the contract's frozen dataclasses on every
search's path."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import MISSING, Field, fields
from typing import Any, TypeVar

T = TypeVar("T")


class _Factory:
    """The default of a field with a default factory, shown as `dataclasses` shows it."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def replacer(cls: type[T]) -> Callable[..., T]:
    """`replace(obj, **changes)` for instances of `cls`, answering as `dataclasses.replace` does.

    `dataclasses.replace` walks `fields()` in Python, five tests a field, before it calls `__init__`:
    ~54 k instructions for a `SearchResult`, and a search replaces three (issue 41). Calling
    `__init__` with every field as a keyword still cost ~45 k (the keywords' dict, then their
    binding). For a slotted class the replace is generated instead (as `slot_init` generates
    `__init__`): every field a keyword-only parameter defaulting to "keep", each value stored
    straight through its slot's descriptor, `__post_init__` called as `__init__` would — ~4× fewer
    instructions, the same new object, a `TypeError` naming a name that is not a field. Only for
    dataclasses whose fields are all `__init__` parameters (`_init_fields`)."""
    names = tuple(f.name for f in _init_fields(cls, "replacer"))
    if len(names) < 2:
        raise TypeError(f"{cls.__name__}: replacer() needs two or more fields")
    if "__slots__" not in cls.__dict__:
        values = operator.attrgetter(*names)

        def replace(obj: T, /, **changes: Any) -> T:
            return obj.__class__(**dict(zip(names, values(obj), strict=True), **changes))

        return replace
    scope: dict[str, Any] = {"_KEEP": _KEEP, "_new": object.__new__}
    body = [" _made = _new(_obj.__class__)"]
    for name in names:
        scope[f"_set_{name}"] = cls.__dict__[name].__set__  # the slot's member descriptor
        body.append(f" _set_{name}(_made, _obj.{name} if {name} is _KEEP else {name})")
    if hasattr(cls, "__post_init__"):
        body.append(" _made.__post_init__()")
    body.append(" return _made")
    params = ", ".join(f"{name}=_KEEP" for name in names)
    exec(f"def replace(_obj, /, *, {params}):\n" + "\n".join(body), scope)  # our own field names only
    made: Callable[..., T] = scope["replace"]
    made.__qualname__ = f"{cls.__qualname__}.replace"
    return made


_KEEP: Any = object()
"""A `replacer` parameter not given: the field keeps its value."""


def slot_init(cls: type[T]) -> type[T]:
    """Give a frozen, slotted dataclass an `__init__` that stores each field through its slot.

    A frozen dataclass's own `__init__` stores a field with `object.__setattr__(self, name, value)`:
    a global lookup, an attribute lookup and a call that looks the slot up again by name, ~0.6 k
    instructions a field; a search builds a hit, a content reference, a page and a result per
    provider hit or call (issue 42). Here each field goes straight to its slot descriptor's
    `__set__`, which skips the frozen `__setattr__` as `object.__setattr__` did: the same parameters
    (names, order, defaults, default factories, keyword-only), `__post_init__` still called, the
    instance as frozen as before. Apply it below `@dataclass(frozen=True, slots=True)`."""
    declared = _init_fields(cls, "slot_init")
    scope: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for f in declared:
        scope[f"_set_{f.name}"] = cls.__dict__[f.name].__set__  # the slot's member descriptor
        if f.default is not MISSING:
            scope[f"_default_{f.name}"] = f.default
            param = f"{f.name}=_default_{f.name}"
        elif f.default_factory is not MISSING:
            scope[f"_factory_{f.name}"] = f.default_factory
            param = f"{f.name}=_FACTORY"
            body.append(f" if {f.name} is _FACTORY: {f.name} = _factory_{f.name}()")
        else:
            param = f.name
        (keyword if f.kw_only else positional).append(param)
        body.append(f" _set_{f.name}(self, {f.name})")
    if hasattr(cls, "__post_init__"):
        body.append(" self.__post_init__()")
    params = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    exec(f"def __init__({params}):\n" + "\n".join(body), scope)  # our own field names only
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


def _init_fields(cls: type, who: str) -> tuple[Field[Any], ...]:
    """`fields(cls)`, refused unless every field is an `__init__` parameter (no `init=False`) and the
    class has no `InitVar` or `ClassVar` (`fields()` leaves them out, so `__init__` would miss one)."""
    declared = fields(cls)
    if not all(f.init for f in declared):
        raise TypeError(f"{cls.__name__}: {who}() needs every field an init field")
    others = set(getattr(cls, "__dataclass_fields__", {})) - {f.name for f in declared}
    if others:
        raise TypeError(f"{cls.__name__}: {who}() cannot carry InitVar or ClassVar {sorted(others)}")
    return declared


__all__ = ["replacer", "slot_init"]

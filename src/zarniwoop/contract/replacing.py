"""`dataclasses.replace`, cheaper, for the contract's frozen dataclasses on every search's path."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")


def replacer(cls: type[T]) -> Callable[..., T]:
    """`replace(obj, **changes)` for instances of `cls`, answering as `dataclasses.replace` does.

    `dataclasses.replace` walks `fields()` in Python, five tests a field, before it calls `__init__`:
    ~54 k instructions for a `SearchResult`, and a search replaced two objects (issue 41). Here the
    current values are read in one C call (`operator.attrgetter`) and `__init__` gets them with the
    changes over them: the same new object, the same `TypeError` for a name that is not a field.
    Only for dataclasses whose fields are all `__init__` parameters (no `init=False`, no `InitVar`:
    `fields()` leaves `InitVar`s out, so `__init__` would miss one), which is checked here."""
    names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
    if len(names) < 2 or not all(f.init for f in fields(cls)):  # type: ignore[arg-type]
        raise TypeError(f"{cls.__name__}: replacer() needs two or more fields, all init fields")
    initvars = set(getattr(cls, "__dataclass_fields__", {})) - set(names)
    if initvars:
        raise TypeError(f"{cls.__name__}: replacer() cannot carry InitVar or ClassVar {sorted(initvars)}")
    values = operator.attrgetter(*names)

    def replace(obj: T, /, **changes: Any) -> T:
        return obj.__class__(**dict(zip(names, values(obj), strict=True), **changes))

    return replace


__all__ = ["replacer"]

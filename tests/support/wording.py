"""A third party's own words, asked of the installed version (issue 24): a test compares what
Zarniwoop passes on with what the library says today, never with a copy of one release's text."""

from __future__ import annotations

from typing import Any


def jsonschema_says(instance: Any, schema: dict[str, Any]) -> str:
    """The message of the first error jsonschema (Draft 2020-12) finds in `instance`."""
    from jsonschema import Draft202012Validator

    return next(iter(Draft202012Validator(schema).iter_errors(instance))).message

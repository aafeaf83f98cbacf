"""The one name rule for tenant, project, team and account ids, and the one "path inside root" check.

A name becomes a folder (`workspace/<tenant>/<project>`, `index/…`, `documents/…`), a settings
scope and a token binding, so it must never be able to climb out of a folder or alias another
scope. Every entry point checks names with `check_name` — CLI options and their environment
variables, the config file, `tokens create`, HTTP paths and query parameters, `/mcp?tenant=` — and
every path built from them goes through `path_inside`, so even a name that slipped past an entry
(an old database row) cannot reach outside its root.

The rule: `[a-z0-9][a-z0-9._-]{0,63}` — lower-case letters, digits, `.`, `_`, `-`; 1 to 64
characters; never starting with `.` (so never `.` or `..`) or `_`. Upper case is refused rather than
folded, so "Acme" and "acme" can never be two spellings of one folder on a case-insensitive disk.

The settings levels `_system` (tenant) and `_tenant` (project) are reserved: they start with `_`,
so no user-given id can be one. Operator commands that address a level explicitly (the CLI's
`--tenant _system` / `--project _tenant`) pass `allow_level=True`.

    check_name("tenant", "acme")                      # "acme"
    check_name("tenant", "..")                        # InvalidRequestError("tenant", …)
    path_inside(home / "workspace", "acme", "review") # home/workspace/acme/review
"""

from __future__ import annotations

import re
from pathlib import Path

from .errors import InvalidRequestError

NAME_RULE = "[a-z0-9][a-z0-9._-]{0,63}"
"""Tenant, project, team and account ids (documented in docs/security.md)."""
MAX_NAME_CHARS = 64
SYSTEM_TENANT = "_system"
"""The tenant of the system settings level."""
TENANT_LEVEL = "_tenant"
"""The project of a tenant's own settings level."""
LEVEL_NAMES = frozenset({SYSTEM_TENANT, TENANT_LEVEL})

_NAME = re.compile(NAME_RULE)


def is_valid_name(value: object) -> bool:
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def check_name(field: str, value: object, *, allow_level: bool = False) -> str:
    """`value` if it is a valid id, else `InvalidRequestError` naming `field` and the rule.

    Args:
        field: what the caller called it (`tenant`, `--project`, `tenants.<name>`), for the message.
        allow_level: also accept the reserved settings levels `_system` / `_tenant`.
    """
    if allow_level and value in LEVEL_NAMES:
        return str(value)
    if is_valid_name(value):
        return str(value)
    return _refuse(field, value)


def _refuse(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise InvalidRequestError(field, f"must be a string, got {type(value).__name__}")
    shown = repr(value) if len(value) <= 80 else repr(value[:40] + "…")
    if not value:
        why = "must not be empty"
    elif len(value) > MAX_NAME_CHARS:
        why = f"must be at most {MAX_NAME_CHARS} characters, got {len(value)}"
    elif value in LEVEL_NAMES or value.startswith("_"):
        why = f"names starting with '_' are reserved for settings levels, got {shown}"
    else:
        why = f"expected lower-case letters, digits, '.', '_', '-' (pattern {NAME_RULE}), got {shown}"
    raise InvalidRequestError(field, why)


def path_inside(root: Path, *parts: str) -> Path:
    """`root/part/…`, refused (`InvalidRequestError` naming `path`) unless it resolves inside `root`.

    Symlinks are followed on both sides, so a link planted inside the root that points out of it
    is refused too. The path need not exist.
    """
    shown = "/".join(parts)
    if not parts or any(not part or "\x00" in part for part in parts):
        raise InvalidRequestError("path", f"{shown!r} is not a path inside {root}")
    base = Path(root).resolve()
    target = base.joinpath(*parts).resolve()
    if not target.is_relative_to(base) or target == base:
        raise InvalidRequestError("path", f"{shown!r} would leave {root}")
    return target


__all__ = [
    "LEVEL_NAMES",
    "MAX_NAME_CHARS",
    "NAME_RULE",
    "SYSTEM_TENANT",
    "TENANT_LEVEL",
    "check_name",
    "is_valid_name",
    "path_inside",
]

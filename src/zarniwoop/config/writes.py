"""Writing settings: one batch, validated as a whole, kept all-or-nothing.

The CLI's `settings set/delete` and the web console's `PUT /v1/settings` both come here, so the
same rules hold everywhere:

- a key the run's config file names belongs to the file (its layer is in force while it is given):
  refused, naming the file;
- a key no documentation knows, or an endpoint key of an id the level does not see defined (no
  `.protocol` at a built-in, system, its tenant or its project level, none in the batch:
  `research.endpoint.nosuch.timeoutMs`): refused when `strict` (the
  console's forms never send one), else written and returned in `BatchReport.warnings`;
- a key the level may not write (`config/trust.py`: a system-only switch, an endpoint URL at a
  private address below system level): refused before anything is written;
- the whole configuration is validated after the writes (every scope, like boot validation); the
  first problem rolls the batch back and names its key.

    written = await write_batch(settings, protocols, ("acme", "_tenant"),
                                set={"research.endpoint.serper.enabled": "false"}, delete=[])
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..contract.errors import ConfigError, InvalidRequestError, UnknownKeyError, ZarniwoopError
from ..contract.names import SYSTEM_TENANT, TENANT_LEVEL
from ..contract.query import SearchScope
from . import keys as K
from .known_keys import known_key, nearest_key
from .settings import SettingRow
from .trust import ALLOW_PRIVATE_ENDPOINTS, check_writes, operator_flag

if TYPE_CHECKING:
    from ..contract.protocol import SearchProtocol
    from .settings import SettingService

Validator = Callable[["SettingService", Mapping[str, "SearchProtocol"]], list[ConfigError]]


@dataclass(frozen=True, slots=True)
class BatchReport:
    written: int
    unknown: tuple[str, ...] = ()
    """Keys no documentation knows, or of an endpoint nobody defined, written anyway (not `strict`)."""
    warnings: tuple[str, ...] = ()
    """One `KEY reason` line per `unknown` key, for the caller to show."""


def unknown_key_message(key: str) -> str:
    near = nearest_key(key)
    return f"is not a known setting{f'; did you mean {near}?' if near else ''}"


def unknown_endpoint_message(
    settings: SettingService, key: str, writes: Mapping[str, object], level: tuple[str, str]
) -> str | None:
    """Why `key` names an endpoint the writing level `(tenant, project)` does not see, or None (not
    an endpoint key, its `.protocol` is a built-in's or stored where the level sees it, or written in
    the same batch)."""
    if not key.startswith(K.ENDPOINT_PREFIX):
        return None
    instance_id, _, suffix = key.removeprefix(K.ENDPOINT_PREFIX).partition(".")
    protocol_key = K.endpoint_key(instance_id, K.SUFFIX_PROTOCOL)
    if not suffix or suffix == K.SUFFIX_PROTOCOL or writes.get(protocol_key) is not None:
        return None
    defined = sorted(
        {
            r.key.removeprefix(K.ENDPOINT_PREFIX).split(".", 1)[0]
            for r in [*settings.builtin_rows(), *_visible_rows(settings, level)]
            if r.key.endswith(f".{K.SUFFIX_PROTOCOL}") and r.key.startswith(K.ENDPOINT_PREFIX)
        }
    )
    if instance_id in defined:
        return None
    near = difflib.get_close_matches(instance_id, defined, n=1, cutoff=0.6)
    hint = (
        f"did you mean {K.endpoint_key(near[0], suffix)}?" if near else f"defined here: {', '.join(defined)}"
    )
    return (
        f"names endpoint {instance_id!r}, which is not defined in this scope "
        f"(a new one needs {protocol_key}); {hint}"
    )


def _visible_rows(settings: SettingService, level: tuple[str, str]) -> list[SettingRow]:
    """The stored rows a writer at `level` may learn of: the system level's, and below it only its own
    tenant's and project's. An error must never list (or suggest) an id another tenant defined — a
    probe per key would enumerate them. The operator (system level) sees every scope."""
    tenant, project = level
    if tenant == SYSTEM_TENANT:
        return settings.rows()
    return [
        r
        for r in settings.rows()
        if r.tenant == SYSTEM_TENANT or (r.tenant == tenant and r.project in (TENANT_LEVEL, project))
    ]


async def write_batch(
    settings: SettingService,
    protocols: Mapping[str, SearchProtocol],
    level: tuple[str, str],
    *,
    set: Mapping[str, object] | None = None,
    delete: Iterable[str] = (),
    strict: bool = False,
    validate: Validator,
    types: Mapping[str, str] | None = None,
) -> BatchReport:
    """Write and delete at one level `(tenant, project)`; raise naming the first bad key, writing nothing."""
    tenant, project = level
    writes = dict(set or {})
    deletes = list(delete)
    unknown: list[str] = []
    warnings: list[str] = []
    for key in [*writes, *deletes]:
        owned = settings.file_row(tenant, project, key)
        if owned is not None:
            verb = "change" if key in writes else "remove"
            raise InvalidRequestError(
                key,
                f"is set in {owned.file}, which is in force for this run; {verb} it there instead",
            )
        if key not in writes:
            continue
        problem = (
            unknown_key_message(key)
            if known_key(key) is None
            else unknown_endpoint_message(settings, key, writes, level)
        )
        if problem is not None:
            if strict:
                raise UnknownKeyError(key, problem)
            unknown.append(key)
            warnings.append(f"{key} {problem}")
    # Who may write what (system-only switches, endpoint URLs below system level): before any write.
    row_level = SettingRow(tenant, project, "", "STRING", "").level
    system = settings.scoped(SearchScope(SYSTEM_TENANT, TENANT_LEVEL))
    allowed = check_writes(
        row_level,
        {k: None if v is None else str(v) for k, v in writes.items()},
        allow_private_endpoints=operator_flag(system, ALLOW_PRIVATE_ENDPOINTS),
    )
    if allowed:
        raise allowed[0]
    try:
        async with settings.db.transaction():
            for key, value in writes.items():
                await settings.set(tenant, project, key, value, (types or {}).get(key))
            for key in deletes:
                await settings.delete(tenant, project, key)
            errors = validate(settings, protocols)
            if errors:
                raise errors[0]
    except ZarniwoopError:
        # the transaction rolled back: reload the snapshot at once, so that no reader (the next
        # write's checks, a search) ever sees an emptied one
        settings.invalidate()
        await settings.refresh()
        raise
    await settings.refresh()
    return BatchReport(len(writes) + len(deletes), tuple(unknown), tuple(warnings))


__all__ = [
    "BatchReport",
    "unknown_endpoint_message",
    "unknown_key_message",
    "write_batch",
]

"""Writing settings: one batch, validated as a whole, kept all-or-nothing.

The CLI's `settings set/delete` and the web console's `PUT /v1/settings` both come here, so the
same rules hold everywhere:

- a key the config file names belongs to the file (it is written again at every start): refused,
  naming the file;
- a key no documentation knows: refused when `strict` (the console's forms never send one), else
  the caller warns;
- a key the level may not write (`config/trust.py`: a system-only switch, an endpoint URL at a
  private address below system level): refused before anything is written;
- the whole configuration is validated after the writes (every scope, like boot validation); the
  first problem rolls the batch back and names its key.

    written = await write_batch(settings, protocols, config, ("acme", "_tenant"),
                                set={"research.endpoint.serper.enabled": "false"}, delete=[])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..contract.errors import ConfigError, InvalidRequestError, ZarniwoopError
from ..contract.names import SYSTEM_TENANT, TENANT_LEVEL
from ..contract.query import SearchScope
from .known_keys import known_key, nearest_key
from .settings import SettingRow
from .trust import ALLOW_PRIVATE_ENDPOINTS, check_writes, operator_flag

if TYPE_CHECKING:
    from ..contract.protocol import SearchProtocol
    from .file import ConfigFile
    from .settings import SettingService

Validator = Callable[["SettingService", Mapping[str, "SearchProtocol"]], list[ConfigError]]


@dataclass(frozen=True, slots=True)
class BatchReport:
    written: int
    unknown: tuple[str, ...] = ()
    """Keys no documentation knows, written anyway (not `strict`): warn about them."""


def file_owner(config: ConfigFile, tenant: str, project: str, key: str) -> str | None:
    """The config file that owns `key` at this level, or None."""
    for t, p, k, _ in config.scoped_settings():
        if (t, p, k) == (tenant, project, key):
            return str(config.path) if config.path else "the config"
    return None


def unknown_key_message(key: str) -> str:
    near = nearest_key(key)
    return f"is not a known setting{f'; did you mean {near}?' if near else ''}"


async def write_batch(
    settings: SettingService,
    protocols: Mapping[str, SearchProtocol],
    config: ConfigFile,
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
    for key in [*writes, *deletes]:
        owner = file_owner(config, tenant, project, key)
        if owner is not None:
            verb = "change" if key in writes else "remove"
            raise InvalidRequestError(
                key, f"is set in {owner}, which writes it again at every start; {verb} it there instead"
            )
        if key in writes and known_key(key) is None:
            if strict:
                raise InvalidRequestError(key, unknown_key_message(key))
            unknown.append(key)
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
    async with settings.db.transaction():
        try:
            for key, value in writes.items():
                await settings.set(tenant, project, key, value, (types or {}).get(key))
            for key in deletes:
                await settings.delete(tenant, project, key)
            errors = validate(settings, protocols)
            if errors:
                raise errors[0]
        except ZarniwoopError:
            settings.invalidate()  # the transaction rolls back; the snapshot must forget it too
            raise
    await settings.refresh()
    return BatchReport(len(writes) + len(deletes), tuple(unknown))


__all__ = ["BatchReport", "file_owner", "unknown_key_message", "write_batch"]

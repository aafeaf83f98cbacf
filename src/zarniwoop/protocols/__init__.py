"""Built-in protocols, one pure module per wire format, and the registry that finds them.

Built-ins and add-ons alike register a protocol object in the entry-point group
`zarniwoop.protocols`; `load_protocols()` collects them once per process.
"""

from __future__ import annotations

import logging
from functools import cache
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..contract.protocol import SearchProtocol

log = logging.getLogger(__name__)
GROUP = "zarniwoop.protocols"


@cache
def load_protocols() -> dict[str, SearchProtocol]:
    """`{protocol id: protocol}` for every registered protocol. A broken add-on is logged and skipped."""
    found: dict[str, SearchProtocol] = {}
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        try:
            protocol = ep.load()
        except Exception as exc:  # an add-on's import error must not take the service down
            log.warning("protocol entry point %s could not be loaded: %s", ep.name, exc)
            continue
        if protocol.id in found:
            log.warning("protocol id %s registered twice; keeping the first", protocol.id)
            continue
        found[protocol.id] = protocol
    return found

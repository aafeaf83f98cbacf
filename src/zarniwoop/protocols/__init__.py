"""Built-in protocols, one pure module per wire format, and the registry that finds them.

Built-ins and add-ons alike register a protocol object in the entry-point group
`zarniwoop.protocols`; `load_protocols()` collects them once per process.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from functools import cache
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from ..contract.enums import Modality, Tier

if TYPE_CHECKING:
    from ..contract.protocol import SearchProtocol

log = logging.getLogger(__name__)
GROUP = "zarniwoop.protocols"
_REFUSED: dict[str, str] = {}


def protocol_problem(protocol: Any) -> str | None:
    """Why a protocol object cannot be registered, naming it and the bad declaration; None if it can.

    The dispatcher trusts `modalities` and `tiers` (where declared) to be the contract's enums
    (cooldown subjects, settings keys and the routing view are built from them), so an add-on
    declaring `"PODCAST"` or the text `"web"` is refused here rather than failing later with an
    `AttributeError`.
    """
    protocol_id = getattr(protocol, "id", None)
    if not isinstance(protocol_id, str) or not protocol_id:
        return f"protocol {protocol!r} has no `id`"
    for attribute, enum in (("modalities", Modality), ("tiers", Tier)):
        if attribute == "tiers" and not hasattr(protocol, "tiers"):
            continue  # undeclared: every tier (`contract.protocol.protocol_tiers`)
        declared = getattr(protocol, attribute, None)
        if not isinstance(declared, (frozenset, set, tuple, list)) or not declared:
            return f"protocol {protocol_id!r}: `{attribute}` must be a non-empty set of {enum.__name__}"
        kind = "modality" if enum is Modality else "tier"
        for value in sorted(declared, key=str):
            if isinstance(value, enum):
                continue
            if isinstance(value, str) and value.strip().upper() in enum.__members__:
                member = f"{enum.__name__}.{value.strip().upper()}"
                return f"protocol {protocol_id!r} declares {kind} {value!r} as text; declare {member}"
            known = ", ".join(m.value for m in enum)
            return f"protocol {protocol_id!r} declares unknown {kind} {value!r}; known: {known}"
    return None


def registered(group: str, kind: str) -> Iterator[tuple[str, Any]]:
    """`(name, object)` of each entry point in `group`, by name: how add-ons plug in (protocols here,
    LLM vendors in `llm/adapters/wire.py`). One whose import fails is logged naming its `kind` and skipped."""
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        try:
            loaded = ep.load()
        except Exception as exc:  # an add-on's import error must not take the service down
            log.warning("%s entry point %s could not be loaded: %s", kind, ep.name, exc)
            continue
        yield ep.name, loaded


@cache
def load_protocols() -> dict[str, SearchProtocol]:
    """`{protocol id: protocol}` for every registered protocol. A broken add-on is logged and
    skipped; one whose declaration is refused (`protocol_problem`) is listed by `refused_protocols`."""
    found: dict[str, SearchProtocol] = {}
    _REFUSED.clear()
    for name, protocol in registered(GROUP, "protocol"):
        problem = protocol_problem(protocol)
        if problem is not None:
            log.warning("protocol entry point %s refused: %s", name, problem)
            _REFUSED[str(getattr(protocol, "id", None) or name)] = problem
            continue
        if protocol.id in found:
            log.warning("protocol id %s registered twice; keeping the first", protocol.id)
            continue
        found[protocol.id] = protocol
    return found


def refused_protocols() -> Mapping[str, str]:
    """`{protocol id: why}` for the registered protocols `load_protocols` refused."""
    load_protocols()
    return dict(_REFUSED)


def checked_protocols(protocols: Mapping[str, SearchProtocol]) -> dict[str, SearchProtocol]:
    """Protocols handed in by code (`Runtime.open(protocols=…)`), each checked as an add-on is;
    `ConfigError` naming the protocol and the bad declaration otherwise."""
    from ..contract.errors import ConfigError

    for key, protocol in protocols.items():
        problem = protocol_problem(protocol)
        if problem is not None:
            raise ConfigError(f"protocols.{key}", problem)
    return dict(protocols)

"""Which models a caller may use: the aliases that resolve and the catalog's chat models, each only
where the credential cascade finds a key for it (`GET /v1/models` of the gateway).

    models = await usable_models(manager, catalog, LlmCall(tenant="acme", project="review", account="mike"))
    [(m.id, m.owned_by, m.credential_source) for m in models]

Nothing is called and nothing is reserved: this walks the same settings, org units and credential
store that `LlmManager.prepare` does, so what is listed is what a call with that `model` finds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ...contract.errors import InvalidRequestError, UnknownModelError
from ...contract.query import SearchScope
from ..adapters.ids import model_problem
from ..choice.aliases import ALIAS_PREFIX, FALLBACK_SUFFIX, resolve
from ..choice.key import CandidateBuilder

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ...config.settings import SettingService
    from ...tenancy.accounts import OrgDirectory
    from ...tenancy.credentials import CredentialStore
    from .catalog import Catalog


class Sources(Protocol):
    """What is read of the `LlmManager` passed in: the stores its `prepare` walks (the catalog room
    sits below the manager, so it names the attributes, not the class)."""

    @property
    def settings(self) -> SettingService: ...
    @property
    def credentials(self) -> CredentialStore: ...
    @property
    def directory(self) -> OrgDirectory: ...
    @property
    def environ(self) -> Mapping[str, str]: ...


class Caller(Protocol):
    """Who asks: the scope fields of an `LlmCall`."""

    @property
    def tenant(self) -> str: ...
    @property
    def project(self) -> str: ...
    @property
    def account(self) -> str: ...
    @property
    def team(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class UsableModel:
    id: str
    """What to send as `model`: an alias (`default:analyze`) or `<instance>:<wire name>`."""
    owned_by: str
    """The provider instance that serves it."""
    target: str
    """`<instance>:<model>` it resolves to (the id itself for a catalog model)."""
    credential_source: str
    """Whose key a call would use: account, project, team, tenant, operator or local."""
    alias: bool = False
    wire_type: str = ""
    """The wire the serving instance speaks (`liveness.py` probes the local ones)."""


async def usable_models(manager: Sources, catalog: Catalog | None, call: Caller) -> list[UsableModel]:
    """Aliases first (settings order), then catalog chat models by instance and name; no duplicates."""
    await manager.settings.refresh(max_age=1.0)
    await manager.credentials.refresh(max_age=1.0)
    await manager.directory.refresh(max_age=1.0)
    scope_key = SearchScope(call.tenant, call.project)
    settings = manager.settings.scoped(scope_key)
    scope = manager.directory.scope(call.tenant, call.project, call.account, team=call.team)
    builder = CandidateBuilder(scope, settings, manager.credentials, manager.environ)
    keys: dict[str, str | None] = {}

    def source(wire: str, instance: str, model: str) -> str | None:
        if instance not in keys:  # a key is the vendor's, not one model's (CandidateBuilder.key_for)
            found = builder.key_for(wire, instance, model, builder.base_url(wire, instance))
            keys[instance] = found[1] if found is not None else None
        return keys[instance]

    out: list[UsableModel] = []
    for key in settings.with_prefix(ALIAS_PREFIX):
        if key.endswith(FALLBACK_SUFFIX):
            continue
        prefix, _, rest = key.partition(".")
        alias = f"{prefix}:{rest}"
        try:
            found = resolve(alias, settings)
        except (UnknownModelError, InvalidRequestError):  # unresolvable, or not a model id its vendor admits
            continue
        credential = source(found.protocol_type, found.instance, found.model)
        if credential is not None:
            target = f"{found.instance}:{found.model}"
            out.append(
                UsableModel(
                    alias, found.instance, target, credential, alias=True, wire_type=found.protocol_type
                )
            )
    if catalog is not None:
        for doc in sorted(catalog.models(scope_key), key=lambda d: (d.instance, d.wire_name)):
            wire = builder.wire_type(doc.instance)
            if doc.kind != "chat" or wire is None or model_problem(wire, doc.wire_name) is not None:
                continue
            credential = source(wire, doc.instance, doc.wire_name)
            if credential is not None:
                model_id = f"{doc.instance}:{doc.wire_name}"
                out.append(UsableModel(model_id, doc.instance, model_id, credential, wire_type=wire))
    return out


__all__ = ["UsableModel", "usable_models"]

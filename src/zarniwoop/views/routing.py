"""The whole routing view of a scope: the search block, the LLM alias resolutions, add-on sections.

`GET /v1/_routing`, `zarniwoop routing --json` and `Zarniwoop.routing()` all answer with this:

    {"scope": {...},
     "search": [...], "searchCascades": {...}, "tiers": [...],      # views/providers.py:routing_view
     "llm": {"default": {providerType, instance, displayName, model, path} | {"error", "code"},
             "aliases": [{alias, target, providerType, instance, displayName, model, path}
                         | {alias, target, error}],
             "warnings": [{alias, instance, model, contextDiscipline, message}]},   # seed 002 §7a
     ...sections other components add (`Runtime.routing_sections`)}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..contract.errors import UnknownModelError
from .providers import RoutingSection, routing_view

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..config.settings import SettingService
    from ..contract.query import SearchScope
    from ..dispatch.dispatcher import Dispatcher
    from ..llm.catalog import Catalog


async def routing_report(
    dispatcher: Dispatcher,
    settings: SettingService,
    scope: SearchScope,
    *,
    admin: bool,
    sections: Mapping[str, RoutingSection] | None = None,
    catalog: Catalog | None = None,
    profile: str | None = None,
) -> dict[str, Any]:
    view = await routing_view(dispatcher, scope, admin=admin, sections=sections, profile=profile)
    view["llm"] = llm_routing(settings, scope)
    view["llm"]["warnings"] = llm_warnings(settings, scope, catalog)
    return view


def llm_warnings(
    settings: SettingService, scope: SearchScope, catalog: Catalog | None
) -> list[dict[str, Any]]:
    """Research aliases (`default:analyze|web|deep`) bound to a model with weak context discipline."""
    from ..llm.traits import discipline_warnings

    return [w.to_json() for w in discipline_warnings(settings.scoped(scope), catalog, scope)]


def llm_routing(settings_service: SettingService, scope: SearchScope) -> dict[str, Any]:
    """Where the scope's default model and each `ai.alias.*` resolve to, or why they do not."""
    from ..llm.adapters.wire import instance_display_name
    from ..llm.choice.aliases import alias_table, resolve

    settings = settings_service.scoped(scope)
    try:
        default: dict[str, Any] = resolve("", settings).to_json("default")
        default.pop("spec", None)
    except UnknownModelError as exc:
        default = {"error": exc.reason, "code": exc.code}
    aliases = alias_table(settings)
    for target in (default, *aliases):
        if target.get("instance"):
            target["displayName"] = instance_display_name(settings, target["instance"])
    return {"default": default, "aliases": aliases}


__all__ = ["llm_routing", "llm_warnings", "routing_report"]

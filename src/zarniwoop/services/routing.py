"""The whole routing view of a scope: the search block, the LLM alias resolutions, add-on sections.

`GET /v1/_routing`, `zarniwoop routing --json` and `Zarniwoop.routing()` all answer with this:

    {"scope": {...},
     "search": [...], "searchCascades": {...}, "tiers": [...],      # dispatch/status.py:routing_view
     "llm": {"default": {providerType, instance, model, path} | {"error"},
             "aliases": [{alias, target, providerType, instance, model, path} | {alias, target, error}],
             "warnings": [{alias, instance, model, contextDiscipline, message}]},   # seed 002 §7a
     ...sections other layers attach as runtime.extras["routing_sections"]}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..contract.errors import UnknownModelError
from ..dispatch.status import ROUTING_SECTIONS_KEY, routing_view

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..runtime import Runtime


async def routing_report(runtime: Runtime, scope: SearchScope, *, admin: bool) -> dict[str, Any]:
    view = await routing_view(
        runtime.dispatcher, scope, admin=admin, sections=runtime.extras.get(ROUTING_SECTIONS_KEY)
    )
    view["llm"] = llm_routing(runtime, scope)
    view["llm"]["warnings"] = await llm_warnings(runtime, scope)
    return view


async def llm_warnings(runtime: Runtime, scope: SearchScope) -> list[dict[str, Any]]:
    """Research aliases (`default:analyze|web|deep`) bound to a model with weak context discipline."""
    from ..llm.service import get_catalog
    from ..llm.traits import discipline_warnings

    catalog = await get_catalog(runtime)
    return [w.to_json() for w in discipline_warnings(runtime.settings.scoped(scope), catalog, scope)]


def llm_routing(runtime: Runtime, scope: SearchScope) -> dict[str, Any]:
    """Where the scope's default model and each `ai.alias.*` resolve to, or why they do not."""
    from ..llm.aliases import alias_table, resolve

    settings = runtime.settings.scoped(scope)
    try:
        default: dict[str, Any] = resolve("", settings).to_json("default")
        default.pop("spec", None)
    except UnknownModelError as exc:
        default = {"error": exc.reason}
    return {"default": default, "aliases": alias_table(settings)}


__all__ = ["llm_routing", "llm_warnings", "routing_report"]

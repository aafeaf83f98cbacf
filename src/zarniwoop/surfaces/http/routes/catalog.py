"""`/v1/ai-models`: the model catalog of the scope, as the console's Models page shows it.

GET /v1/ai-models?instance=…   every model the catalog knows in the scope (all seven layers merged),
                               per LLM provider instance, each with its merged fields and, per field,
                               the layer that set it (`fieldLayers`, views/catalog.py)

Any token may read its own scope's catalog (it holds model metadata and prices, no secrets); the
actions on it — `POST /v1/admin/ai-models/refresh` (a tenant admin for its tenant, the operator for
every layer) and `…/discover` (the operator's) — live in admin.py.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from ....llm.adapters.wire import instance_display_name
from ....views.catalog import catalog_models
from ..deps import Caller, Ctx
from ..errors import ERROR_RESPONSES

router = APIRouter(tags=["models"], responses=ERROR_RESPONSES)


class InstanceCount(BaseModel):
    instance: str
    models: int
    displayName: str | None = Field(description="`ai.provider.<instance>.displayName`, where set")


class CatalogModel(BaseModel):
    """One merged catalog entry (`zarniwoop models show --json`) and where each field came from."""

    instance: str
    wireName: str
    slug: str
    contextWindowTokens: int | None
    defaultMaxOutputTokens: int | None
    size: str | None
    kind: str
    capabilities: list[str]
    stripThinkTags: bool
    messageParser: str | None
    messageParserSource: str | None
    pricing: dict[str, Any] | None
    traits: dict[str, str | None]
    displayName: str | None
    discoveredBy: str | None
    discoveredAt: str | None
    layers: list[str] = Field(description="The layers that hold a document of the model, outer → inner")
    known: bool
    fieldLayers: dict[str, str] = Field(
        description="Per field (`pricing.inputPerMTok` for a key of a mapping) the layer that set it; "
        "a field no layer sets is absent"
    )


class CatalogModels(BaseModel):
    scope: dict[str, str]
    layers: list[str] = Field(description="The scope's seven layers, outer → inner")
    instances: list[InstanceCount]
    instance: str | None
    models: list[CatalogModel]


@router.get("/v1/ai-models", summary="The scope's model catalog: merged fields and the layer of each")
async def ai_models(
    ctx: Ctx,
    caller: Caller,
    instance: Annotated[
        str | None, Query(max_length=100, description="Only this provider instance (default: every one)")
    ] = None,
) -> CatalogModels:
    catalog = await ctx.runtime.catalog()
    settings = ctx.runtime.settings.scoped(caller.scope)
    names = {
        i: instance_display_name(settings, i) for i in {d.instance for d in catalog.models(caller.scope)}
    }
    return CatalogModels.model_validate(catalog_models(catalog, caller.scope, instance or None, names))


__all__ = ["router"]

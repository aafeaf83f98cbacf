"""The model catalog of a scope as the web console shows it (`GET /v1/ai-models`): every model per
provider instance with its merged fields and, per field, the layer that set it.

The seven layers of a project scope, outer → inner: `bundled`, `_system/_tenant auto`,
`_system/_tenant manual`, `<tenant>/_tenant auto`, `<tenant>/_tenant manual`,
`<tenant>/<project> auto`, `<tenant>/<project> manual` (llm/catalog/snapshot.py). A field that no
layer sets is absent from `fieldLayers` (its value is the default); `messageParser` and
`stripThinkTags` that come from the bundled `model-quirks.yaml` patterns say `model-quirks.yaml`.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from ..contract.errors import UnknownNameError
from ..llm.catalog.snapshot import layer_keys, layer_label

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..contract.query import SearchScope
    from ..llm.catalog import Catalog, ModelDoc

QUIRKS = "model-quirks.yaml"


def _field_layers(doc: ModelDoc, traced: dict[str, str]) -> dict[str, str]:
    out = dict(sorted(traced.items()))
    if doc.parser_source == "quirks":
        if doc.parser and "messageParser" not in out:
            out["messageParser"] = QUIRKS
        if doc.strip_think_tags and "stripThinkTags" not in out:
            out["stripThinkTags"] = QUIRKS
    return out


def model_with_layers(catalog: Catalog, scope: SearchScope, doc: ModelDoc) -> dict[str, Any]:
    """One model's JSON (`ModelDoc.to_json`) with its `fieldLayers` (`zarniwoop models show`)."""
    traced = catalog.snapshot.field_layers(scope.tenant, scope.project)
    return {**doc.to_json(), "fieldLayers": _field_layers(doc, traced.get((doc.instance, doc.wire_name), {}))}


def catalog_models(
    catalog: Catalog,
    scope: SearchScope,
    instance: str | None = None,
    display_names: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """`{"scope", "layers", "instances": [{"instance", "models", "displayName"}], "instance",
    "models": [ModelDoc JSON + "fieldLayers"]}`; an `instance` the scope's catalog does not know is
    a 404 naming it. `display_names`: `ai.provider.<instance>.displayName` per instance, where set."""
    snapshot = catalog.snapshot  # one consistent state for the view and the trace
    docs = snapshot.view_for(scope).models()
    counts = Counter(d.instance for d in docs)
    if instance is not None and instance not in counts:
        known = ", ".join(sorted(counts)) or "none"
        raise UnknownNameError(
            "instance", f"the catalog has no models for instance {instance!r} in this scope; known: {known}"
        )
    traced = snapshot.field_layers(scope.tenant, scope.project)
    models = [
        {**d.to_json(), "fieldLayers": _field_layers(d, traced.get((d.instance, d.wire_name), {}))}
        for d in docs
        if instance is None or d.instance == instance
    ]
    return {
        "scope": {"tenant": scope.tenant, "project": scope.project},
        "layers": [layer_label(k) for k in layer_keys(scope.tenant, scope.project)],
        "instances": [
            {"instance": name, "models": n, "displayName": (display_names or {}).get(name)}
            for name, n in sorted(counts.items())
        ],
        "instance": instance,
        "models": models,
    }


__all__ = ["QUIRKS", "catalog_models", "model_with_layers"]

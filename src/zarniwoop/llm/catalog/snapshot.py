"""An immutable catalog snapshot: every layer's documents, and merged views per scope built on demand.

Seven layers per `(instance, wire model name)`, applied outer → inner, each overwriting the fields
it sets (seed 002 §3a.3)::

    bundled                                   ← package data, always manual-shaped
    (_system, _tenant)   auto, then manual
    (tenant, _tenant)    auto, then manual    ← when a tenant is given
    (tenant, project)    auto, then manual    ← when a project other than _tenant is given

The merge is deep per field; lists are replaced whole (so an owner can remove a capability);
`null` replaces too. Manual beats auto within a scope, and an inner scope — even its auto layer —
beats every outer one: project reality beats the tenant default, whoever wrote it.

A document's wire name is its `wireName`, else one declared by another layer for the same path
(so a manual override of `ollama/qwen3-30b.yaml` need not repeat `wireName: "qwen3:30b"`), else
its path. Nothing here changes after construction except the memo of merged views, which only
ever gains complete entries.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from ...config.keys import SYSTEM_TENANT, TENANT_LEVEL
from ...contract.errors import BadPathError, DocumentError
from .model_doc import ModelDoc, build_model_doc, validate_document
from .paths import AUTO, MANUAL, SUFFIX, parse_doc_path

if TYPE_CHECKING:
    from ...contract.query import SearchScope
    from ..parsers.quirks import Quirks
    from .documents import StoredDocument

log = logging.getLogger("zarniwoop.llm.catalog")

BUNDLED = ("_bundled", "_bundled", MANUAL)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when present: a refresh parses every document of every scope."""
LayerKey = tuple[str, str, str]
"""`(tenant, project, "model" | "model-auto")`; `BUNDLED` for the package data."""
FieldLayers = dict[tuple[str, str], dict[str, str]]
"""`Snapshot.field_layers`: `(instance, wire name)` → field (`pricing.inputPerMTok`) → layer label."""


def layer_label(key: LayerKey) -> str:
    if key == BUNDLED:
        return "bundled"
    return f"{key[0]}/{key[1]} {'manual' if key[2] == MANUAL else 'auto'}"


def layer_keys(tenant: str, project: str) -> list[LayerKey]:
    """The layers that apply to a scope, outer → inner."""
    keys = [BUNDLED, (SYSTEM_TENANT, TENANT_LEVEL, AUTO), (SYSTEM_TENANT, TENANT_LEVEL, MANUAL)]
    if tenant and tenant != SYSTEM_TENANT:
        keys += [(tenant, TENANT_LEVEL, AUTO), (tenant, TENANT_LEVEL, MANUAL)]
        if project and project != TENANT_LEVEL:
            keys += [(tenant, project, AUTO), (tenant, project, MANUAL)]
    return keys


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` on top of `base`: mappings merge per key, everything else (lists too) is replaced."""
    out = dict(base)
    for key, value in override.items():
        current = out.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            out[key] = deep_merge(current, value)
        else:
            out[key] = value
    return out


@dataclass(frozen=True, slots=True)
class LoadedDocument:
    instance: str
    slug: str
    fields: Mapping[str, Any]
    source: str


@dataclass(frozen=True, slots=True)
class SkippedDocument:
    """A document left out (or, in `Snapshot.ignored`, one field of a document that loaded)."""

    source: str
    reason: str
    tenant: str = SYSTEM_TENANT
    """Whose document it is, so a tenant's refresh reports only its own."""

    def to_json(self) -> dict[str, str]:
        return {"file": self.source, "reason": self.reason}


class CatalogView:
    """The merged catalog of one scope: O(1) lookups by `(instance, wire name)` (or file slug)."""

    def __init__(self, scope: tuple[str, str], models: dict[tuple[str, str], ModelDoc]) -> None:
        self.scope = scope
        self._models = models
        self._by_slug = {(d.instance, d.slug): d for d in models.values()}

    def lookup(self, instance: str, model: str) -> ModelDoc | None:
        return self._models.get((instance, model)) or self._by_slug.get((instance, model))

    def models(self, instance: str | None = None) -> list[ModelDoc]:
        docs = [d for d in self._models.values() if instance is None or d.instance == instance]
        return sorted(docs, key=lambda d: (d.instance, d.wire_name))

    def __len__(self) -> int:
        return len(self._models)


@dataclass
class Snapshot:
    layers: Mapping[LayerKey, Mapping[tuple[str, str], LoadedDocument]]
    quirks: Quirks
    skipped: tuple[SkippedDocument, ...] = ()
    ignored: tuple[SkippedDocument, ...] = ()
    """Fields dropped from documents that loaded (an unknown `messageParser`)."""
    generation: int = 0
    _views: dict[tuple[str, str], CatalogView] = field(default_factory=dict, repr=False)

    def view(self, tenant: str = SYSTEM_TENANT, project: str = TENANT_LEVEL) -> CatalogView:
        key = (tenant or SYSTEM_TENANT, project or TENANT_LEVEL)
        found = self._views.get(key)
        if found is None:
            # Two readers may build the same view at once; both results are complete and equal.
            found = self._views.setdefault(key, self._build_view(*key))
        return found

    def view_for(self, scope: SearchScope | None) -> CatalogView:
        return self.view() if scope is None else self.view(scope.tenant, scope.project)

    def _build_view(self, tenant: str, project: str) -> CatalogView:
        keys = layer_keys(tenant, project)
        declared: dict[tuple[str, str], str] = {}
        for key in keys:
            for (instance, slug), doc in self.layers.get(key, {}).items():
                if doc.fields.get("wireName"):
                    declared[(instance, slug)] = doc.fields["wireName"]
        merged: dict[tuple[str, str], tuple[dict[str, Any], str, list[str]]] = {}
        for key in keys:
            label = layer_label(key)
            for (instance, slug), doc in self.layers.get(key, {}).items():
                wire = doc.fields.get("wireName") or declared.get((instance, slug)) or slug
                entry = merged.get((instance, wire))
                if entry is None:
                    merged[(instance, wire)] = (dict(doc.fields), slug, [label])
                else:
                    merged[(instance, wire)] = (
                        deep_merge(entry[0], doc.fields),
                        entry[1],
                        [*entry[2], label],
                    )
        models = {
            (instance, wire): build_model_doc(instance, wire, slug, fields, tuple(labels), self.quirks)
            for (instance, wire), (fields, slug, labels) in merged.items()
        }
        return CatalogView((tenant, project), models)

    def field_layers(self, tenant: str = SYSTEM_TENANT, project: str = TENANT_LEVEL) -> FieldLayers:
        """Which layer set each field of each merged model of a scope: `(instance, wire)` → field →
        layer label. A mapping field is traced per key (`pricing.inputPerMTok`), anything else whole
        (a list or a `null` replaces what outer layers had, so it is the inner layer's alone).

        The same walk as the merge (`_build_view`), kept apart from it: the merged views sit on
        every LLM call's path, this one only on the console's and the CLI's."""
        keys = layer_keys(tenant or SYSTEM_TENANT, project or TENANT_LEVEL)
        declared: dict[tuple[str, str], str] = {}
        for key in keys:
            for (instance, slug), doc in self.layers.get(key, {}).items():
                if doc.fields.get("wireName"):
                    declared[(instance, slug)] = doc.fields["wireName"]
        out: FieldLayers = {}
        merged: dict[tuple[str, str], dict[str, Any]] = {}
        for key in keys:
            label = layer_label(key)
            for (instance, slug), doc in self.layers.get(key, {}).items():
                wire = doc.fields.get("wireName") or declared.get((instance, slug)) or slug
                fields = out.setdefault((instance, wire), {})
                so_far = merged.setdefault((instance, wire), {})
                for name, value in doc.fields.items():
                    merges = isinstance(value, Mapping) and isinstance(so_far.get(name), Mapping)
                    if not merges:  # replaced whole: what outer layers set of it is gone
                        fields.pop(name, None)
                        for stale in [f for f in fields if f.startswith(f"{name}.")]:
                            del fields[stale]
                    if isinstance(value, Mapping) and value:
                        for sub in value:
                            fields[f"{name}.{sub}"] = label
                    elif not merges:
                        fields[name] = label
                merged[(instance, wire)] = deep_merge(so_far, doc.fields)
        return out

    # Counters for the refresh report.
    def bundled_models(self) -> int:
        return len(self.layers.get(BUNDLED, {}))

    def bundled_providers(self) -> int:
        return len({instance for instance, _ in self.layers.get(BUNDLED, {})})

    def counts(self, tenant: str | None = None) -> LayerCounts:
        """The refresh report's counters: every layer's, or one tenant's alone (its own scopes,
        documents and problems — what its admin may see)."""
        keys = [k for k in self.layers if k != BUNDLED and (tenant is None or k[0] == tenant)]
        return LayerCounts(
            override_scopes=len({(k[0], k[1]) for k in keys if self.layers[k]}),
            documents=sum(len(self.layers[k]) for k in keys)
            + (len(self.layers.get(BUNDLED, {})) if tenant is None else 0),
            skipped=tuple(s for s in self.skipped if tenant is None or s.tenant == tenant),
            ignored=tuple(s for s in self.ignored if tenant is None or s.tenant == tenant),
        )

    def with_tenant(self, tenant: str, fresh: Snapshot, generation: int) -> Snapshot:
        """This snapshot with `tenant`'s layers (and their problems) replaced by `fresh`'s."""
        layers = {k: v for k, v in self.layers.items() if k == BUNDLED or k[0] != tenant}
        layers.update({k: v for k, v in fresh.layers.items() if k != BUNDLED and k[0] == tenant})
        return Snapshot(
            layers,
            self.quirks,
            tuple(s for s in self.skipped if s.tenant != tenant) + fresh.skipped,
            tuple(s for s in self.ignored if s.tenant != tenant) + fresh.ignored,
            generation=generation,
        )


@dataclass(frozen=True, slots=True)
class LayerCounts:
    override_scopes: int
    documents: int
    skipped: tuple[SkippedDocument, ...]
    ignored: tuple[SkippedDocument, ...]


def build_snapshot(
    bundled: Iterable[StoredDocument],
    stored: Iterable[StoredDocument],
    quirks: Quirks,
    known_parsers: frozenset[str],
    generation: int = 0,
) -> Snapshot:
    """Parse and validate every document; a bad one is skipped with a warning naming its file."""
    layers: dict[LayerKey, dict[tuple[str, str], LoadedDocument]] = {}
    skipped: list[SkippedDocument] = []
    ignored: list[SkippedDocument] = []

    def skip(doc: StoredDocument, reason: str) -> None:
        log.warning("skipping catalog document %s: %s", doc.source, reason)
        skipped.append(SkippedDocument(doc.source, reason, doc.tenant))

    documents = [(BUNDLED, d) for d in bundled] + [(None, d) for d in stored]
    for fixed_key, doc in documents:
        if not doc.path.endswith(SUFFIX):
            continue  # notes, READMEs: not model documents
        kind, _, relative = doc.path.partition("/")
        if kind not in (MANUAL, AUTO) or (fixed_key is not None and kind != MANUAL):
            skip(doc, f"not under {MANUAL}/ or {AUTO}/")
            continue
        if doc.text is None:
            skip(doc, doc.error or "cannot read")
            continue
        try:
            where = parse_doc_path(relative)
            notes: list[str] = []
            fields = validate_document(yaml.load(doc.text, Loader=_LOADER), known_parsers, notes)
        except BadPathError as exc:
            skip(doc, f"bad path: {exc}")
            continue
        except yaml.YAMLError as exc:
            skip(doc, f"invalid YAML: {_yaml_problem(exc)}")
            continue
        except DocumentError as exc:
            skip(doc, str(exc))
            continue
        for note in notes:
            log.warning("catalog document %s: %s", doc.source, note)
            ignored.append(SkippedDocument(doc.source, note, doc.tenant))
        key = fixed_key or (doc.tenant, doc.project, kind)
        layers.setdefault(key, {})[(where.instance, where.slug)] = LoadedDocument(
            where.instance, where.slug, fields, doc.source
        )
    return Snapshot(layers, quirks, tuple(skipped), tuple(ignored), generation=generation)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    return where + (getattr(exc, "problem", None) or str(exc).splitlines()[0])

"""The model catalog: per-model YAML documents in seven layers, merged per scope (seed 002 §3a).

`Catalog` (lookups and atomic-swap refresh), `ModelDoc` (one merged entry), the document store
interface with its file implementation, the bundled layer, and the first-boot bootstrap.
"""

from __future__ import annotations

from .bootstrap import BootstrapReport, bootstrap_bundled
from .catalog import REFRESH_INTERVAL_SECONDS, Catalog, RefreshReport
from .documents import BundledDocuments, DocumentStore, FileDocumentStore, StoredDocument
from .model_doc import KINDS, ModelDoc, ModelSize, ModelTraits, Pricing, validate_document
from .paths import AUTO, MANUAL, doc_path, parse_doc_path, slug_for
from .snapshot import CatalogView, SkippedDocument, Snapshot, deep_merge, layer_keys

__all__ = [
    "AUTO",
    "KINDS",
    "MANUAL",
    "REFRESH_INTERVAL_SECONDS",
    "BootstrapReport",
    "BundledDocuments",
    "Catalog",
    "CatalogView",
    "DocumentStore",
    "FileDocumentStore",
    "ModelDoc",
    "ModelSize",
    "ModelTraits",
    "Pricing",
    "RefreshReport",
    "SkippedDocument",
    "Snapshot",
    "StoredDocument",
    "bootstrap_bundled",
    "deep_merge",
    "doc_path",
    "layer_keys",
    "parse_doc_path",
    "slug_for",
    "validate_document",
]

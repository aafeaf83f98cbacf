"""Helpers for catalog tests: write documents into a file store and a private bundled layer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from zarniwoop.llm.catalog import BundledDocuments, Catalog, FileDocumentStore

LAYER_DIRS = {
    "bundled": None,
    "sys-auto": ("_system", "_tenant", "model-auto"),
    "sys-manual": ("_system", "_tenant", "model"),
    "ten-auto": ("acme", "_tenant", "model-auto"),
    "ten-manual": ("acme", "_tenant", "model"),
    "proj-auto": ("acme", "review", "model-auto"),
    "proj-manual": ("acme", "review", "model"),
}
LAYER_LABELS = {
    "bundled": "bundled",
    "sys-auto": "_system/_tenant auto",
    "sys-manual": "_system/_tenant manual",
    "ten-auto": "acme/_tenant auto",
    "ten-manual": "acme/_tenant manual",
    "proj-auto": "acme/review auto",
    "proj-manual": "acme/review manual",
}


class Docs:
    """A documents root and a bundled root under one temporary directory."""

    def __init__(self, base: Path) -> None:
        self.root = base / "documents"
        self.bundled_root = base / "bundled"
        (self.bundled_root / "model").mkdir(parents=True, exist_ok=True)
        self.store = FileDocumentStore(self.root)

    def path(self, layer: str, relative: str) -> Path:
        where = LAYER_DIRS[layer]
        if where is None:
            return self.bundled_root / "model" / relative
        tenant, project, kind = where
        return self.root / tenant / project / kind / relative

    def write(self, layer: str, relative: str, fields: dict[str, Any] | str) -> Path:
        file = self.path(layer, relative)
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(fields if isinstance(fields, str) else yaml.safe_dump(fields, sort_keys=False))
        return file

    def catalog(self) -> Catalog:
        return Catalog(self.store, BundledDocuments(self.bundled_root))

"""First-boot bootstrap: copy the bundled model documents into `(_system, _tenant)` (seed 002 §3a.5).

On the first start the system scope gets a copy of every bundled document under `model/`, so the
operator has real files to edit. Later versions run the bootstrap again and only add models that
are new in the bundle: a document that exists is never overwritten (the operator's edit wins), and
one the operator deleted stays deleted — a ledger (`catalog-bootstrap.yaml` in the system scope,
outside `model/`) remembers which bundled paths were offered once. `model-auto/` is never touched:
that is discovery's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import yaml

from ...config.keys import SYSTEM_TENANT, TENANT_LEVEL
from .documents import BundledDocuments, DocumentStore
from .paths import MANUAL

log = logging.getLogger("zarniwoop.llm.catalog")

LEDGER_PATH = "catalog-bootstrap.yaml"


@dataclass(frozen=True, slots=True)
class BootstrapReport:
    copied: tuple[str, ...]
    kept: tuple[str, ...]
    """Bundled paths the system scope already has (possibly edited): left alone."""
    withheld: tuple[str, ...]
    """Bundled paths offered before and deleted since by the operator: not copied again."""


async def bootstrap_bundled(store: DocumentStore, bundled: BundledDocuments | None = None) -> BootstrapReport:
    bundled = bundled or BundledDocuments()
    existing = set(await store.list_paths(SYSTEM_TENANT, TENANT_LEVEL, f"{MANUAL}/"))
    offered = _read_ledger(await store.read(SYSTEM_TENANT, TENANT_LEVEL, LEDGER_PATH))
    copied, kept, withheld = [], [], []
    for doc in bundled.documents():
        if doc.path in existing:
            kept.append(doc.path)
        elif doc.path in offered:
            withheld.append(doc.path)
        elif doc.text is not None:
            await store.write(SYSTEM_TENANT, TENANT_LEVEL, doc.path, doc.text)
            copied.append(doc.path)
    ledger = sorted(offered | set(copied) | set(kept))
    if ledger != sorted(offered):
        await store.write(SYSTEM_TENANT, TENANT_LEVEL, LEDGER_PATH, _ledger_text(ledger))
    if copied:
        log.info("model catalog bootstrap: copied %d bundled documents into _system/_tenant", len(copied))
    return BootstrapReport(tuple(copied), tuple(kept), tuple(withheld))


def _read_ledger(text: str | None) -> set[str]:
    if not text:
        return set()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        log.warning("ignoring unreadable %s; bundled documents may be offered again", LEDGER_PATH)
        return set()
    paths = data.get("offered") if isinstance(data, dict) else None
    return {p for p in paths if isinstance(p, str)} if isinstance(paths, list) else set()


def _ledger_text(paths: list[str]) -> str:
    header = (
        "# Bundled model documents already copied into this scope once (zarniwoop bootstrap).\n"
        "# A path listed here and deleted from model/ is not copied again.\n"
    )
    return header + yaml.safe_dump({"offered": paths}, sort_keys=False)

"""The model catalog service: lookups from the current snapshot, refresh by atomic swap (seed 002 §3a.4).

A refresh loads every layer, validates and indexes it into a new `Snapshot` off to the side, and
then replaces the one reference readers use — a single assignment. A reader holds either the old
snapshot or the new one, never a half-built one. Lookups are synchronous, O(1) after the first
lookup of a scope (its merged view is memoized in the snapshot), and safe from any thread.

Refreshes run on demand (`await catalog.refresh()`, the CLI, the admin endpoint, after discovery)
and every 30 minutes when the refresh loop runs (`catalog.start_refresh_loop()`). Catalog data
changes in days or weeks, so there is no change notification: 30 minutes of drift between
replicas is acceptable, and the admin endpoint refreshes at once.

    catalog = Catalog(FileDocumentStore(home / "documents"))
    await catalog.refresh()
    doc = catalog.lookup("anthropic", "claude-sonnet-4-6", SearchScope("acme", "review"))
    doc.context_window_tokens, doc.size, doc.pricing.input_per_mtok, doc.parser
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..parsers import default_quirks, parser_names
from .documents import BundledDocuments, DocumentStore
from .model_doc import ModelDoc, build_model_doc
from .paths import AUTO, MANUAL, slug_for
from .snapshot import CatalogView, SkippedDocument, Snapshot, build_snapshot

if TYPE_CHECKING:
    from ...contract.query import SearchScope
    from ..parsers.quirks import Quirks

log = logging.getLogger("zarniwoop.llm.catalog")

REFRESH_INTERVAL_SECONDS = 30 * 60


@dataclass(frozen=True, slots=True)
class RefreshReport:
    refreshed_at: str
    bundled_models_loaded: int
    bundled_providers_loaded: int
    override_scopes: int
    documents_loaded: int
    skipped: tuple[SkippedDocument, ...]
    duration_ms: float
    ignored: tuple[SkippedDocument, ...] = ()
    """Fields dropped from documents that still loaded (an unknown `messageParser`)."""
    tenant: str | None = None
    """The tenant whose layers were reloaded; None: every layer (the system's refresh)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "refreshedAt": self.refreshed_at,
            "scope": "system" if self.tenant is None else "tenant",
            "tenant": self.tenant,
            "bundledModelsLoaded": self.bundled_models_loaded,
            "bundledProvidersLoaded": self.bundled_providers_loaded,
            "overrideScopes": self.override_scopes,
            "documentsLoaded": self.documents_loaded,
            "skipped": [s.to_json() for s in self.skipped],
            "ignoredFields": [s.to_json() for s in self.ignored],
            "durationMs": round(self.duration_ms, 1),
        }


class Catalog:
    """Per-model metadata for every scope.

    Args:
        store: the scoped documents (`FileDocumentStore`, or a database-backed store).
        bundled: the bundled layer (default: the package data).
        quirks: the `model-quirks.yaml` rules (default: the bundled file).
    """

    def __init__(
        self,
        store: DocumentStore,
        bundled: BundledDocuments | None = None,
        *,
        quirks: Quirks | None = None,
    ) -> None:
        self.store = store
        self.bundled = bundled or BundledDocuments()
        self.quirks = quirks or default_quirks()
        self._snapshot = Snapshot({}, self.quirks)
        self._refresh_lock = asyncio.Lock()
        self._loop_task: asyncio.Task[None] | None = None

    @property
    def snapshot(self) -> Snapshot:
        """The current snapshot; hold on to it to read several things from one consistent state."""
        return self._snapshot

    async def refresh(self, tenant: str | None = None) -> RefreshReport:
        """Load every layer into a new snapshot and swap it in; returns what was loaded and skipped.

        With `tenant`, only that tenant's layers are read again (its `_tenant` level and every
        project); the bundled and system layers and other tenants' stay as they were, and the
        report counts the tenant's documents and problems alone — what a tenant admin may see.
        """
        async with self._refresh_lock:
            started = time.perf_counter()
            manual = await self.store.scan(f"{MANUAL}/", tenant)
            auto = await self.store.scan(f"{AUTO}/", tenant)
            bundled = [] if tenant is not None else await asyncio.to_thread(self.bundled.documents)
            generation = self._snapshot.generation + 1
            snapshot = await asyncio.to_thread(
                build_snapshot, bundled, [*auto, *manual], self.quirks, parser_names(), generation
            )
            if tenant is not None:
                snapshot = self._snapshot.with_tenant(tenant, snapshot, generation)
            self._snapshot = snapshot  # the swap: one reference assignment
            counts = snapshot.counts(tenant)
            report = RefreshReport(
                refreshed_at=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
                bundled_models_loaded=snapshot.bundled_models(),
                bundled_providers_loaded=snapshot.bundled_providers(),
                override_scopes=counts.override_scopes,
                documents_loaded=counts.documents,
                skipped=counts.skipped,
                ignored=counts.ignored,
                duration_ms=(time.perf_counter() - started) * 1000,
                tenant=tenant,
            )
            log.info(
                "model catalog refreshed%s: %d documents, %d skipped",
                "" if tenant is None else f" for tenant {tenant}",
                report.documents_loaded,
                len(report.skipped),
            )
            return report

    def view(self, scope: SearchScope | None = None) -> CatalogView:
        return self._snapshot.view_for(scope)

    def lookup(
        self,
        instance: str,
        model: str,
        scope: SearchScope | None = None,
        *,
        fallback_instance: str | None = None,
    ) -> ModelDoc | None:
        """The merged entry of `model` (wire name or file slug) under `instance`, for a scope.

        Args:
            instance: the provider instance (for default instances: the wire type's name).
            model: the wire model name (`qwen3:30b`) or its file slug (`qwen3-30b`).
            scope: whose layers apply; None = bundled and `(_system, _tenant)` only.
            fallback_instance: where to look when `instance` has no entry — pass the wire type, so a
                named instance (`ollama-gpu2`, type `ollama`) inherits the type's metadata.

        Returns:
            The `ModelDoc`, or None when no layer has a document for the model.
        """
        view = self._snapshot.view_for(scope)
        found = view.lookup(instance, model)
        if found is None and fallback_instance and fallback_instance != instance:
            found = view.lookup(fallback_instance, model)
        return found

    def lookup_or_default(
        self,
        instance: str,
        model: str,
        scope: SearchScope | None = None,
        *,
        fallback_instance: str | None = None,
    ) -> ModelDoc:
        """Like `lookup`, but a model without documents gets a stand-in (`known=False`, unpriced,
        parser and think stripping from `model-quirks.yaml`), so callers need no None branch."""
        found = self.lookup(instance, model, scope, fallback_instance=fallback_instance)
        if found is not None:
            return found
        doc = build_model_doc(instance, model, slug_for(model), {}, (), self.quirks)
        return replace(doc, known=False)

    def models(self, scope: SearchScope | None = None, instance: str | None = None) -> list[ModelDoc]:
        return self._snapshot.view_for(scope).models(instance)

    async def run_refresh_loop(self, interval: float = REFRESH_INTERVAL_SECONDS) -> None:
        """Refresh every `interval` seconds until cancelled; a failed refresh keeps the old snapshot."""
        while True:
            await asyncio.sleep(interval)
            try:
                await self.refresh()
            except Exception:
                log.exception("model catalog refresh failed; keeping the previous snapshot")

    def start_refresh_loop(self, interval: float = REFRESH_INTERVAL_SECONDS) -> asyncio.Task[None]:
        if self._loop_task is None or self._loop_task.done():
            self._loop_task = asyncio.get_running_loop().create_task(
                self.run_refresh_loop(interval), name="model-catalog-refresh"
            )
        return self._loop_task

    async def aclose(self) -> None:
        task, self._loop_task = self._loop_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

"""Model discovery: the vendors' listing APIs → auto documents, per scope and instance (seed 002 §3a.6).

Scope symmetry: a scope's *own* settings (not the cascade) name its provider instances —
`ai.provider.<instance>.{type,apiKey,baseUrl}` — and the documents land in that same scope's
`model-auto/<instance>/`. Settings in `(acme, _tenant)` never produce documents in
`(acme, research)` or anywhere else. An instance's type is its `.type` setting, else its name when
that is a wire type; an unknown type, a disabled instance (`.enabled: false`) or a missing key
where the vendor needs one skips the instance, saying why.

Failure isolation: instances are listed concurrently, each under its own timeout; a 401, a hang
or a malformed body skips that instance (reported with its error) and never the others. A listed
instance's auto folder is rewritten to mirror the listing: new models added, vanished ones
removed. Manual documents (`model/…`) are never touched, and prices are never written — no vendor
lists them; they come from the manual layers.

    report = await discover(settings, store, http_client, [("acme", "_tenant")], timeout=10.0)
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import yaml

from ...config.keys import SYSTEM_TENANT, TENANT_LEVEL
from ...config.trust import ALLOW_PRIVATE_ENDPOINTS, OPERATOR_LEVELS, operator_flag
from ...contract.errors import ProviderHTTPError, ZarniwoopError
from ...contract.protocol import Secret
from ...contract.query import SearchScope
from ...transport.http import HttpTransport
from ...transport.status import raise_for_status
from ..adapters.ids import safe_listing
from ..adapters.wire import WIRE_TYPES, base_url_for, uses_default_endpoint
from .listing import MAX_PAGES, ListedModel, listing_requests, parse_listing
from .paths import AUTO, doc_path, slug_for, valid_instance

if TYPE_CHECKING:
    from ...config.settings import SettingRow, SettingService
    from .documents import DocumentStore

log = logging.getLogger("zarniwoop.llm.discovery")

PROVIDER_PREFIX = "ai.provider."
DISCOVERED_BY = "discovery-job"
DEFAULT_TIMEOUT_SECONDS = 10.0
_HEADER = (
    "# Written by zarniwoop model discovery and rewritten on every run; put your edits in model/ instead.\n"
)


@dataclass(frozen=True, slots=True)
class ProviderInstanceSettings:
    instance: str
    protocol_type: str
    base_url: str
    api_key: Secret | None
    untrusted: bool = False
    """A tenant or project set `baseUrl` (`config/trust.py`): the error of its listing says the
    status only, and its requests pass the SSRF guard unless the operator allows private endpoints."""
    guarded: bool = False


@dataclass(frozen=True, slots=True)
class InstanceResult:
    instance: str
    protocol_type: str
    models: int
    written: int
    removed: int
    duration_ms: float

    def to_json(self) -> dict[str, Any]:
        return {
            "instance": self.instance,
            "providerType": self.protocol_type,
            "models": self.models,
            "written": self.written,
            "removed": self.removed,
            "durationMs": round(self.duration_ms, 1),
        }


@dataclass(frozen=True, slots=True)
class SkippedInstance:
    instance: str
    protocol_type: str | None
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"instance": self.instance, "providerType": self.protocol_type, "error": self.error}


@dataclass(frozen=True, slots=True)
class ScopeDiscovery:
    tenant: str
    project: str
    instances: tuple[InstanceResult, ...]
    skipped: tuple[SkippedInstance, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "project": self.project,
            "instances": [r.to_json() for r in self.instances],
            "skippedInstances": [s.to_json() for s in self.skipped],
        }


@dataclass(frozen=True, slots=True)
class DiscoveryReport:
    scopes: tuple[ScopeDiscovery, ...]
    discovered_at: str
    duration_ms: float

    def to_json(self) -> dict[str, Any]:
        return {
            "discoveredAt": self.discovered_at,
            "scopes": [s.to_json() for s in self.scopes],
            "models": sum(r.models for s in self.scopes for r in s.instances),
            "skipped": sum(len(s.skipped) for s in self.scopes),
            "durationMs": round(self.duration_ms, 1),
        }


def instances_of_scope(
    rows: Iterable[SettingRow], open_value: Callable[[SettingRow], str], *, allow_private: bool = False
) -> tuple[list[ProviderInstanceSettings], list[SkippedInstance]]:
    """The provider instances one scope's own settings define, and those that cannot be listed.

    `allow_private`: the operator's `research.allowPrivateEndpoints` (a `baseUrl` row below system
    level is guarded unless it is on)."""
    grouped: dict[str, dict[str, SettingRow]] = {}
    for row in rows:
        if row.key.startswith(PROVIDER_PREFIX) and "." in row.key[len(PROVIDER_PREFIX) :]:
            instance, field = row.key[len(PROVIDER_PREFIX) :].rsplit(".", 1)
            grouped.setdefault(instance, {})[field] = row
    found: list[ProviderInstanceSettings] = []
    skipped: list[SkippedInstance] = []
    for instance, fields in grouped.items():
        declared = open_value(fields["type"]).strip() if "type" in fields else ""
        wire = declared or (instance if instance in WIRE_TYPES else "")
        if not wire:
            skipped.append(SkippedInstance(instance, None, f"no type: set {PROVIDER_PREFIX}{instance}.type"))
            continue
        if wire not in WIRE_TYPES:
            skipped.append(
                SkippedInstance(
                    instance,
                    wire,
                    f"unknown provider type {wire!r} ({PROVIDER_PREFIX}{instance}.type); "
                    f"expected one of {', '.join(WIRE_TYPES)}",
                )
            )
            continue
        if not valid_instance(instance):
            skipped.append(SkippedInstance(instance, wire, "instance name must match [a-z0-9._-]+"))
            continue
        if "enabled" in fields and open_value(fields["enabled"]).strip().lower() in (
            "false",
            "0",
            "no",
            "off",
        ):
            skipped.append(SkippedInstance(instance, wire, "disabled"))
            continue
        base = open_value(fields["baseUrl"]) if "baseUrl" in fields else None
        key_text = open_value(fields["apiKey"]).strip() if "apiKey" in fields else ""
        if not key_text and WIRE_TYPES[wire].key_required and uses_default_endpoint(wire, base):
            skipped.append(
                SkippedInstance(instance, wire, f"no API key ({PROVIDER_PREFIX}{instance}.apiKey)")
            )
            continue
        untrusted = "baseUrl" in fields and fields["baseUrl"].level not in OPERATOR_LEVELS
        found.append(
            ProviderInstanceSettings(
                instance,
                wire,
                base_url_for(wire, base),
                Secret(key_text) if key_text else None,
                untrusted=untrusted,
                guarded=untrusted and not allow_private,
            )
        )
    return found, skipped


async def list_models(
    transport: HttpTransport, settings: ProviderInstanceSettings, timeout: float
) -> list[ListedModel]:
    """Every model of one instance's listing (all pages); raises on any failure."""
    candidates = listing_requests(settings.protocol_type, settings.base_url, settings.api_key)
    guarded = settings.guarded
    for index, spec in enumerate(candidates):
        raw = await transport.send(spec, timeout=timeout, guarded=guarded)
        if raw.status == 404 and index < len(candidates) - 1:
            continue  # an older server without this variant of the listing
        raise_for_status(raw, settings.instance)
        models, next_spec = parse_listing(spec, raw.body)
        pages = 1
        while next_spec is not None and pages < MAX_PAGES:
            raw = await transport.send(next_spec, timeout=timeout, guarded=guarded)
            raise_for_status(raw, settings.instance)
            more, next_spec = parse_listing(next_spec, raw.body)
            models.extend(more)
            pages += 1
        return safe_listing(settings.protocol_type, settings.instance, models)
    raise AssertionError("listing_requests returns at least one request")


def auto_document(model: ListedModel, slug: str, discovered_at: str) -> str:
    """The YAML of one auto document: only what the vendor's listing says."""
    fields: dict[str, Any] = {}
    if slug != model.wire_name:
        fields["wireName"] = model.wire_name
    if model.context_window:
        fields["contextWindowTokens"] = model.context_window
    if model.max_output:
        fields["defaultMaxOutputTokens"] = model.max_output
    fields["kind"] = model.kind
    if model.display_name:
        fields["displayName"] = model.display_name
    fields["discoveredBy"] = DISCOVERED_BY
    fields["discoveredAt"] = discovered_at
    return _HEADER + yaml.safe_dump(fields, sort_keys=False, allow_unicode=True)


async def write_auto_documents(
    store: DocumentStore,
    tenant: str,
    project: str,
    instance: str,
    models: list[ListedModel],
    discovered_at: str,
) -> tuple[int, int]:
    """Mirror a listing into `model-auto/<instance>/` of a scope; returns (written, removed)."""
    slugs: dict[str, str] = {}
    written: set[str] = set()
    for model in models:
        if model.wire_name in slugs.values():
            continue  # listed twice
        slug = slug_for(model.wire_name)
        if slug in slugs:  # two wire names, one slug ("a:b" and "a-b"): keep both apart
            slug = f"{slug}-{hashlib.sha256(model.wire_name.encode()).hexdigest()[:8]}"
        slugs[slug] = model.wire_name
        path = doc_path(AUTO, instance, slug)
        await store.write(tenant, project, path, auto_document(model, slug, discovered_at))
        written.add(path)
    removed = 0
    for path in await store.list_paths(tenant, project, f"{AUTO}/{instance}/"):
        if path not in written and path.endswith(".yaml") and await store.delete(tenant, project, path):
            removed += 1
    return len(written), removed


async def discover_scope(
    tenant: str,
    project: str,
    rows: Iterable[SettingRow],
    open_value: Callable[[SettingRow], str],
    store: DocumentStore,
    transport: HttpTransport,
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    discovered_at: str | None = None,
    allow_private: bool = False,
) -> ScopeDiscovery:
    instances, skipped = instances_of_scope(rows, open_value, allow_private=allow_private)
    stamp = discovered_at or _now()

    async def one(settings: ProviderInstanceSettings) -> InstanceResult | SkippedInstance:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout):
                models = await list_models(transport, settings, timeout)
        except TimeoutError:
            return SkippedInstance(
                settings.instance, settings.protocol_type, f"no answer within {timeout:g}s"
            )
        except ProviderHTTPError as exc:
            return SkippedInstance(settings.instance, settings.protocol_type, exc.message)
        except ZarniwoopError as exc:
            return SkippedInstance(settings.instance, settings.protocol_type, exc.message)
        except Exception as exc:  # isolation: one instance's surprise never stops the others
            log.exception("model discovery of %s failed", settings.instance)
            return SkippedInstance(settings.instance, settings.protocol_type, f"{type(exc).__name__}: {exc}")
        written, removed = await write_auto_documents(
            store, tenant, project, settings.instance, models, stamp
        )
        return InstanceResult(
            settings.instance,
            settings.protocol_type,
            len(models),
            written,
            removed,
            (time.perf_counter() - started) * 1000,
        )

    outcomes = await asyncio.gather(*(one(i) for i in instances))
    for outcome in outcomes:
        if isinstance(outcome, SkippedInstance):
            log.warning(
                "model discovery skipped %s/%s %s: %s", tenant, project, outcome.instance, outcome.error
            )
    return ScopeDiscovery(
        tenant,
        project,
        tuple(o for o in outcomes if isinstance(o, InstanceResult)),
        tuple(skipped) + tuple(o for o in outcomes if isinstance(o, SkippedInstance)),
    )


def scopes_with_providers(settings: SettingService) -> list[tuple[str, str]]:
    """Every scope whose own settings define a provider instance, the system scope first."""
    found = {(r.tenant, r.project) for r in settings.rows() if r.key.startswith(PROVIDER_PREFIX)}
    return sorted(found, key=lambda s: (s[0] != SYSTEM_TENANT, s))


async def discover(
    settings: SettingService,
    store: DocumentStore,
    transport: HttpTransport,
    scopes: list[tuple[str, str]] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> DiscoveryReport:
    """Discover the models of every instance of the given scopes (default: every scope with any).

    Args:
        settings: the SettingService (its per-scope rows are read, PASSWORD values opened).
        store: where the auto documents go.
        transport: the process's `HttpTransport` (its SSRF policy guards instances whose `baseUrl` a
            tenant or project set).
        scopes: `(tenant, project)` pairs; None = `scopes_with_providers(settings)`.
        timeout: seconds per instance for its whole listing (all pages).
    """
    started = time.perf_counter()
    stamp = _now()
    await settings.refresh()
    allow_private = operator_flag(
        settings.scoped(SearchScope(SYSTEM_TENANT, TENANT_LEVEL)), ALLOW_PRIVATE_ENDPOINTS
    )
    results = []
    for tenant, project in scopes if scopes is not None else scopes_with_providers(settings):
        rows = settings.rows(tenant, project)
        results.append(
            await discover_scope(
                tenant,
                project,
                rows,
                settings.scoped_value,
                store,
                transport,
                timeout=timeout,
                discovered_at=stamp,
                allow_private=allow_private,
            )
        )
    return DiscoveryReport(tuple(results), stamp, (time.perf_counter() - started) * 1000)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")

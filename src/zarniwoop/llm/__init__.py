"""LLM model resolution: which model a spec means, what the catalog knows about it, how its
responses are cleaned (seed 002 §3, §3a, §4.1, §4.1.1; DESIGN §8).

This package decides *which model* and *what it is*; the next layer (accounts, credentials,
quotas, chat adapters) decides *whose key and budget* and makes the call. Its public surface:

Resolution — `resolve(spec, settings) -> Resolution`
    `spec` is `<provider>:<model>`, `<instance>:<model>`, `<namespace>:<alias>` or a comma cascade
    of those (`default:arthur,default:chat`); `settings` is the call's `ScopedSettings`
    (`runtime.settings.scoped(SearchScope(tenant, project))`). The frozen
    `Resolution(protocol_type, instance, model, path)` says which chat adapter to use
    (`protocol_type`, one of `WIRE_TYPES`), whose `ai.provider.<instance>.{apiKey,baseUrl}` to read
    (`instance`), the wire model name to send (`model`) and every spec tried (`path`). Nothing
    configured → `UnknownModelError` (a `ConfigError`, exit 2) naming the spec and why.
    `base_url_for(protocol_type, configured)` gives the endpoint (defaults per wire type).

Catalog — `catalog = await open_catalog(documents_root)` (a `Runtime` opens one on first use: `await runtime.catalog()`)
    `catalog.lookup(instance, model, scope=None, *, fallback_instance=None) -> ModelDoc | None`,
    where `instance` is the resolution's instance (for default instances that is the wire type's
    name; pass `fallback_instance=resolution.protocol_type` to let a named instance inherit its
    type's entries) and `model` the wire name. `catalog.lookup_or_default(...)` never returns None
    (unknown models get a stand-in with `known=False`). A `ModelDoc` carries
    `context_window_tokens`, `default_max_output_tokens`, `size` (`ModelSize.SMALL | LARGE`, the
    recipe tier hint), `kind`, `capabilities` (`vision`, `pdf`, `tools`, `thinking`, …),
    `pricing` (`Pricing.input_per_mtok` / `output_per_mtok` / cache rates, USD per 1M tokens;
    None = unpriced) with `doc.cost_usd(input_tokens, output_tokens)`, `parser` (message parser
    name or None) and `strip_think_tags`. Lookups are synchronous, O(1), thread-safe, and always
    see one complete snapshot.

Sanitizer — `sanitize(raw_response, model_doc) -> ChatResponse`
    Chat adapters produce a `ChatResponse(text, tool_calls, reasoning, finish_reason, model,
    usage)` with `ToolCall(id, name, arguments)` (arguments as JSON text; `ToolCall.create(id,
    name, dict)` for object-valued wires) and `TokenUsage(input, output)`. `sanitize` applies the
    model's parser (inline tool-call text → `ToolCall`s, broken arguments repaired) and think-tag
    stripping, and returns the raw response itself when nothing applies. `decorate(provider_model,
    model_doc, trace_sink=...)` builds the chain: tracing (raw) always, sanitizing when needed.

Admin — `discover_models(catalog, settings, http, scope) -> dict` (the body of
    `POST /v1/admin/ai-models/discover`), `refresh_seconds(settings)` for a server's refresh loop,
    `validate_ai_settings(settings_service)` for boot validation.

    resolution = resolve("default:analyze", runtime.settings.scoped(scope))
    catalog = await runtime.catalog()
    doc = catalog.lookup_or_default(resolution.instance, resolution.model, scope,
                                    fallback_instance=resolution.protocol_type)
    clean = sanitize(raw, doc)
"""

from __future__ import annotations

from ..contract.errors import UnknownModelError
from .adapters.response import ChatResponse, TokenUsage, ToolCall
from .adapters.wire import WIRE_TYPES, WireType, base_url_for
from .catalog import Catalog, CatalogView, ModelDoc, ModelSize, Pricing, RefreshReport
from .catalog.lifecycle import discover_models, open_catalog, refresh_seconds
from .chain import ChatModel, SanitizingChatModel, TraceSink, TracingChatModel, decorate
from .choice.aliases import MAX_DEPTH, DictSettings, Resolution, alias_table, resolve, split_cascade
from .parsers import MessageParser, get_parser, parser_names, register_parser
from .sanitize import needs_sanitizing, sanitize
from .validate import validate_ai_settings

__all__ = [
    "MAX_DEPTH",
    "WIRE_TYPES",
    "Catalog",
    "CatalogView",
    "ChatModel",
    "ChatResponse",
    "DictSettings",
    "MessageParser",
    "ModelDoc",
    "ModelSize",
    "Pricing",
    "RefreshReport",
    "Resolution",
    "SanitizingChatModel",
    "TokenUsage",
    "ToolCall",
    "TraceSink",
    "TracingChatModel",
    "UnknownModelError",
    "WireType",
    "alias_table",
    "base_url_for",
    "decorate",
    "discover_models",
    "get_parser",
    "needs_sanitizing",
    "open_catalog",
    "parser_names",
    "refresh_seconds",
    "register_parser",
    "resolve",
    "sanitize",
    "split_cascade",
    "validate_ai_settings",
]

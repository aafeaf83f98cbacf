"""One model's catalog entry: the document schema, its validation, and the merged `ModelDoc`.

Schema (seed 002 §3a.2; every field optional in a single document, manual and auto alike)::

    wireName: "qwen3:30b"          # only when the path cannot carry the wire model name
    contextWindowTokens: 200000
    defaultMaxOutputTokens: 8192
    size: LARGE                    # SMALL | LARGE — the recipe tier hint
    kind: chat                     # chat | image | embedding (default chat)
    capabilities: [vision, pdf, tools, thinking]   # a list, replaced as a whole by inner layers
    stripThinkTags: false
    messageParser: null            # a registered parser name; absent → model-quirks.yaml decides
    pricing: {currency: USD, inputPerMTok: 3.0, outputPerMTok: 15.0, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75}
    traits: {contextDiscipline: strong, toolLoopPersistence: very-strong}   # seed 002 §7a, per key
    displayName: Claude Sonnet 4.6
    discoveredBy: manual           # "discovery-job" in auto documents
    discoveredAt: "2026-06-27T10:00:00Z"

`traits` (seed 002 §7a) say how a model behaves in research work: `contextDiscipline` — does it
trust what its context says (tool results, corrections) over its training? — and
`toolLoopPersistence` — does it carry a multi-step tool loop through? Each is one of
`weak | medium | strong | very-strong | variable`; the bundled layer carries the seed's observed
table, and any layer may override one key (mappings merge key by key).

Unknown fields are kept (a newer version may know them) but not interpreted. `pricing: null`
means "unpriced": cost tracking records no cost rather than a made-up one.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ...contract.errors import DocumentError

if TYPE_CHECKING:
    from ..parsers.quirks import Quirks

KINDS = ("chat", "image", "embedding")
TRAIT_LEVELS = ("weak", "medium", "strong", "very-strong", "variable")
TRAIT_KEYS = {"contextDiscipline": "context_discipline", "toolLoopPersistence": "tool_loop_persistence"}
_PRICE_FIELDS = ("inputPerMTok", "outputPerMTok", "cacheReadPerMTok", "cacheWritePerMTok")


class ModelSize(StrEnum):
    SMALL = "SMALL"
    LARGE = "LARGE"


@dataclass(frozen=True, slots=True)
class Pricing:
    """USD (or `currency`) per million tokens."""

    input_per_mtok: float | None
    output_per_mtok: float | None
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None
    currency: str = "USD"

    def cost(
        self, input_tokens: int, output_tokens: int, *, cache_read: int = 0, cache_write: int = 0
    ) -> float:
        """The price of one call; a rate the document leaves out counts as 0 (cache reads fall
        back to the input rate, since that is what an unpriced cache read costs at most)."""
        rates = (
            (input_tokens, self.input_per_mtok),
            (output_tokens, self.output_per_mtok),
            (
                cache_read,
                self.cache_read_per_mtok if self.cache_read_per_mtok is not None else self.input_per_mtok,
            ),
            (
                cache_write,
                self.cache_write_per_mtok if self.cache_write_per_mtok is not None else self.input_per_mtok,
            ),
        )
        return sum(tokens * (rate or 0.0) for tokens, rate in rates) / 1_000_000

    def to_json(self) -> dict[str, Any]:
        return {
            "currency": self.currency,
            "inputPerMTok": self.input_per_mtok,
            "outputPerMTok": self.output_per_mtok,
            "cacheReadPerMTok": self.cache_read_per_mtok,
            "cacheWritePerMTok": self.cache_write_per_mtok,
        }


@dataclass(frozen=True, slots=True)
class ModelTraits:
    """Seed 002 §7a: observed behaviour, decision support for binding research aliases — not a ranking."""

    context_discipline: str | None = None
    """How far the model trusts its context (tool outputs, corrections) over its training."""
    tool_loop_persistence: str | None = None
    """Whether it sustains a multi-step tool loop until an answer."""

    def to_json(self) -> dict[str, str | None]:
        return {
            "contextDiscipline": self.context_discipline,
            "toolLoopPersistence": self.tool_loop_persistence,
        }


@dataclass(frozen=True, slots=True)
class ModelDoc:
    """The merged view of one model for one scope (all seven layers applied)."""

    instance: str
    wire_name: str
    slug: str
    context_window_tokens: int | None = None
    default_max_output_tokens: int | None = None
    size: ModelSize | None = None
    kind: str = "chat"
    capabilities: tuple[str, ...] = ()
    strip_think_tags: bool = False
    parser: str | None = None
    """The message parser name (from the documents, else from `model-quirks.yaml`), or None."""
    parser_source: str | None = None
    """`document` or `quirks`: where `parser` / `strip_think_tags` came from (None: nowhere)."""
    pricing: Pricing | None = None
    traits: ModelTraits = field(default_factory=ModelTraits)
    display_name: str | None = None
    discovered_by: str | None = None
    discovered_at: str | None = None
    layers: tuple[str, ...] = ()
    """The layers that contributed, outer → inner, e.g. `("bundled", "acme/_tenant auto")`."""
    known: bool = True
    """False for the stand-in `Catalog.lookup_or_default` returns for a model without documents."""
    fields: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """The merged document as YAML fields (unknown ones included)."""

    def has_capability(self, name: str) -> bool:
        return name in self.capabilities

    def cost_usd(self, input_tokens: int, output_tokens: int, **cache: int) -> float | None:
        """The cost of a call in the pricing currency, or None when the model is unpriced."""
        return None if self.pricing is None else self.pricing.cost(input_tokens, output_tokens, **cache)

    def to_json(self) -> dict[str, Any]:
        return {
            "instance": self.instance,
            "wireName": self.wire_name,
            "slug": self.slug,
            "contextWindowTokens": self.context_window_tokens,
            "defaultMaxOutputTokens": self.default_max_output_tokens,
            "size": self.size.value if self.size else None,
            "kind": self.kind,
            "capabilities": list(self.capabilities),
            "stripThinkTags": self.strip_think_tags,
            "messageParser": self.parser,
            "messageParserSource": self.parser_source,
            "pricing": self.pricing.to_json() if self.pricing else None,
            "traits": self.traits.to_json(),
            "displayName": self.display_name,
            "discoveredBy": self.discovered_by,
            "discoveredAt": self.discovered_at,
            "layers": list(self.layers),
            "known": self.known,
        }


def validate_document(
    raw: Any, known_parsers: frozenset[str], notes: list[str] | None = None
) -> dict[str, Any]:
    """The document's fields, normalised; `DocumentError` naming the first bad field otherwise.

    An unknown `messageParser` costs only that field (a parser added in a later release, or a
    typo): it is dropped, so an outer layer's parser (else `model-quirks.yaml`'s) applies, and the
    reason is appended to `notes`; size, context window and pricing still load.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise DocumentError(f"expected a mapping of fields, got {type(raw).__name__}")
    doc = dict(raw)
    for key in doc:
        if not isinstance(key, str):
            raise DocumentError(f"field names must be strings, got {key!r}")
    if "wireName" in doc and (not isinstance(doc["wireName"], str) or not doc["wireName"].strip()):
        raise DocumentError(f"wireName must be a non-empty string, got {doc['wireName']!r}")
    for key in ("contextWindowTokens", "defaultMaxOutputTokens"):
        value = doc.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise DocumentError(f"{key} must be a positive integer, got {value!r}")
    if doc.get("size") is not None:
        size = str(doc["size"]).upper()
        if size not in ModelSize.__members__:
            raise DocumentError(f"unknown size {doc['size']!r}; expected SMALL or LARGE")
        doc["size"] = size
    if doc.get("kind") is not None and doc["kind"] not in KINDS:
        raise DocumentError(f"unknown kind {doc['kind']!r}; expected one of {', '.join(KINDS)}")
    caps = doc.get("capabilities")
    if caps is not None and (not isinstance(caps, list) or not all(isinstance(c, str) for c in caps)):
        raise DocumentError(f"capabilities must be a list of names, got {caps!r}")
    if doc.get("stripThinkTags") is not None and not isinstance(doc["stripThinkTags"], bool):
        raise DocumentError(f"stripThinkTags must be true or false, got {doc['stripThinkTags']!r}")
    parser = doc.get("messageParser")
    if parser is not None and parser not in known_parsers:
        del doc["messageParser"]
        if notes is not None:
            notes.append(
                f"unknown messageParser {parser!r} ignored (known: {', '.join(sorted(known_parsers))}); "
                "the other fields apply"
            )
    if doc.get("pricing") is not None:
        doc["pricing"] = _pricing_fields(doc["pricing"])
    if doc.get("traits") is not None:
        doc["traits"] = _trait_fields(doc["traits"])
    for key in ("discoveredAt",):
        if isinstance(doc.get(key), (dt.datetime, dt.date)):
            # YAML reads an unquoted timestamp as a datetime; keep the ISO text.
            value = doc[key]
            doc[key] = value.isoformat().replace("+00:00", "Z")
    for key in ("displayName", "discoveredBy", "discoveredAt"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise DocumentError(f"{key} must be a string, got {doc[key]!r}")
    return doc


def _pricing_fields(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise DocumentError(f"pricing must be a mapping (or null for unpriced), got {raw!r}")
    out = dict(raw)
    if out.get("currency") is not None and not isinstance(out["currency"], str):
        raise DocumentError(f"pricing.currency must be a currency code, got {out['currency']!r}")
    for key in _PRICE_FIELDS:
        value = out.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise DocumentError(f"pricing.{key} must be a number ≥ 0 (per million tokens), got {value!r}")
        out[key] = float(value)
    return out


def _trait_fields(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise DocumentError(f"traits must be a mapping (contextDiscipline, toolLoopPersistence), got {raw!r}")
    out = dict(raw)
    for key in TRAIT_KEYS:
        value = out.get(key)
        if value is None:
            continue
        level = str(value).strip().lower().replace(" ", "-").replace("_", "-")
        if level not in TRAIT_LEVELS:
            raise DocumentError(f"traits.{key} must be one of {', '.join(TRAIT_LEVELS)}, got {value!r}")
        out[key] = level
    return out


def build_model_doc(
    instance: str,
    wire_name: str,
    slug: str,
    merged: Mapping[str, Any],
    layers: tuple[str, ...],
    quirks: Quirks,
) -> ModelDoc:
    """The `ModelDoc` for a merged document; the parser and think stripping fall back to the quirks."""
    rule = quirks.match(wire_name)
    source: str | None = None
    if "messageParser" in merged:  # even null: an explicit "no parser" beats the pattern
        parser, source = merged["messageParser"], "document"
    else:
        parser = rule.message_parser if rule else None
        source = "quirks" if parser else None
    if merged.get("stripThinkTags") is not None:
        strip = bool(merged["stripThinkTags"])
    else:
        strip = bool(rule.strip_think_tags) if rule and rule.strip_think_tags is not None else False
        source = source or ("quirks" if strip else None)
    pricing_fields = merged.get("pricing")
    pricing = None
    if isinstance(pricing_fields, Mapping):
        pricing = Pricing(
            input_per_mtok=pricing_fields.get("inputPerMTok"),
            output_per_mtok=pricing_fields.get("outputPerMTok"),
            cache_read_per_mtok=pricing_fields.get("cacheReadPerMTok"),
            cache_write_per_mtok=pricing_fields.get("cacheWritePerMTok"),
            currency=pricing_fields.get("currency") or "USD",
        )
    size = merged.get("size")
    trait_fields = merged.get("traits")
    traits = (
        ModelTraits(**{attr: trait_fields.get(key) for key, attr in TRAIT_KEYS.items()})
        if isinstance(trait_fields, Mapping)
        else ModelTraits()
    )
    return ModelDoc(
        instance=instance,
        wire_name=wire_name,
        slug=slug,
        context_window_tokens=merged.get("contextWindowTokens"),
        default_max_output_tokens=merged.get("defaultMaxOutputTokens"),
        size=ModelSize(size) if size else None,
        kind=merged.get("kind") or "chat",
        capabilities=tuple(merged.get("capabilities") or ()),
        strip_think_tags=strip,
        parser=parser,
        parser_source=source,
        pricing=pricing,
        traits=traits,
        display_name=merged.get("displayName"),
        discovered_by=merged.get("discoveredBy"),
        discovered_at=merged.get("discoveredAt"),
        layers=layers,
        fields=MappingProxyType(copy.deepcopy(dict(merged))),  # callers cannot reach into the snapshot
    )

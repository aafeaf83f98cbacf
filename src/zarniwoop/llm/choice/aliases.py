"""The model alias resolver: a model spec → (wire type, provider instance, wire model name).

Seed 002 §3 "Model Alias Resolution", "Comma Cascade", "Named Provider Instances". A spec is
`<prefix>:<rest>`, or a comma cascade of such elements. Each element, in order:

1. `prefix` is a wire type (`openai`, `anthropic`, `gemini`, `ollama`, `ollama-cloud`, `lmstudio`)
   → `(prefix, prefix, rest)`; it wins at once.
2. `ai.provider.<prefix>.type` is set → a named instance: `(type, prefix, rest)`; it wins at once.
   A type that is not a wire type is an error, not a miss.
3. `ai.alias.<prefix>.<rest>` is set → the alias is *configured* and wins: its value is resolved
   recursively, and may itself be a cascade (with its own last-element fallback).
4. Otherwise the element is *not configured*: a cascade moves on to the next element. Only the
   last element falls back — for the `default` namespace — to `ai.default.provider` /
   `ai.default.model`; any other namespace is `UnknownModelError`.

Each element carries the chain of specs that led to it (its own "seen" set, so sibling elements
never pollute each other's cycle detection); an element already on its chain is a cycle, and a
chain longer than `MAX_DEPTH` specs is refused. Runtime failures (provider down, quota) are not
the resolver's business: it decides *which* model, before any call.

    >>> settings = {"ai.alias.default.chat": "anthropic:claude-haiku-4-5,openai:gpt-4o-mini"}
    >>> resolve("default:arthur,default:chat", DictSettings(settings))
    Resolution(protocol_type='anthropic', instance='anthropic', model='claude-haiku-4-5',
               path=('default:arthur', 'default:chat', 'anthropic:claude-haiku-4-5'))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ...contract.errors import UnknownModelError
from ..adapters.ids import check_model
from ..adapters.wire import WIRE_TYPES

MAX_DEPTH = 8
"""At most this many specs on one resolution chain (the spec, each alias hop, the final target)."""
DEFAULT_NAMESPACE = "default"
DEFAULT_PROVIDER_KEY = "ai.default.provider"
DEFAULT_MODEL_KEY = "ai.default.model"
ALIAS_PREFIX = "ai.alias."
FALLBACK_SUFFIX = ".fallback"
"""`ai.alias.<prefix>.<rest>.fallback`: the alias's runtime fallback chain (not an alias itself)."""


MODEL_FAMILIES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("gpt-", "chatgpt", "o1", "o3", "o4", "text-embedding"), "openai"),
    (("claude",), "anthropic"),
    (("gemini", "gemma"), "gemini"),
)
"""Name prefixes of the big vendors' models: a bare `gpt-4o` is most likely `openai:gpt-4o`."""


def bare_model_hint(name: str, settings: SettingsReader) -> str | None:
    """The spec a bare model name (no `<provider>:`) probably meant: an alias of that name in the
    `default` namespace, else the vendor whose model names look like it (`gpt-4o` → `openai:gpt-4o`)."""
    if not name:
        return None
    if (settings.get(f"{ALIAS_PREFIX}{DEFAULT_NAMESPACE}.{name}") or "").strip():
        return f"{DEFAULT_NAMESPACE}:{name}"
    lowered = name.lower()
    if lowered in WIRE_TYPES:  # a provider without a model (`gemini`): no model name to suggest
        return None
    for prefixes, provider in MODEL_FAMILIES:
        if lowered.startswith(prefixes):
            return f"{provider}:{name}"
    return None


class SettingsReader(Protocol):
    """What the resolver reads: `ScopedSettings` satisfies it (so does `DictSettings`)."""

    def get(self, key: str, default: str | None = None) -> str | None: ...


class DictSettings:
    """A plain mapping as settings (for tools, tests and examples)."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = dict(values)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self._values.get(key, default)


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where a spec landed, and how."""

    protocol_type: str
    """The wire type: which chat adapter speaks to the instance."""
    instance: str
    """The provider instance: whose `ai.provider.<instance>.{apiKey,baseUrl}` and catalog section apply."""
    model: str
    """The wire model name sent to the API."""
    path: tuple[str, ...]
    """Every spec tried, in order: cascade elements that missed, alias hops, the final target."""

    def to_json(self, spec: str) -> dict[str, Any]:
        return {
            "spec": spec,
            "providerType": self.protocol_type,
            "instance": self.instance,
            "model": self.model,
            "path": list(self.path),
        }


def split_cascade(spec: str) -> list[str]:
    """`"a , b,,c"` → `["a", "b", "c"]`: whitespace trimmed, empty elements skipped."""
    return [part.strip() for part in spec.split(",") if part.strip()]


def resolve(spec: str | None, settings: SettingsReader) -> Resolution:
    """Resolve a model spec against a scope's settings.

    Args:
        spec: `<provider>:<model>`, `<instance>:<model>`, `<namespace>:<alias>`, or a comma cascade
            of those; empty or None means the tenant default (`ai.default.provider/model`).
        settings: the scope's settings (a `ScopedSettings`), read with `get(key)`.

    Returns:
        The `Resolution`; its `path` lists every spec tried.

    Raises:
        UnknownModelError: nothing configured matches, an alias cycle, a chain deeper than
            `MAX_DEPTH`, a malformed element, or a named instance of an unknown type.
        UnsafeValueError: the model it lands on is not an id its wire's vendor admits
            (`adapters/ids.py`): refused before any request is built.

    Example:
        >>> resolve("default:fast", runtime.settings.scoped(SearchScope("acme", "review")))
    """
    text = (spec or "").strip()
    resolver = _Resolver(settings, text)
    found = resolver.tenant_default("(empty spec)") if not text else resolver.cascade(text, ())
    check_model(found[0], found[2])
    return Resolution(found[0], found[1], found[2], tuple(resolver.path))


def alias_table(settings: Any) -> list[dict[str, Any]]:
    """Every configured `ai.alias.*` of a scope with its resolution or the reason it fails.

    For the routing view: `[{"alias": "default:chat", "target": "...", "providerType", "instance",
    "model", "path"} | {"alias", "target", "error"}]`, in settings order.
    """
    out: list[dict[str, Any]] = []
    for key, target in settings.with_prefix(ALIAS_PREFIX).items():
        if key.endswith(FALLBACK_SUFFIX):
            continue
        prefix, _, rest = key.partition(".")
        alias = f"{prefix}:{rest}"
        try:
            entry = resolve(alias, settings).to_json(alias)
        except UnknownModelError as exc:
            entry = {"spec": alias, "error": exc.reason}
        out.append({"alias": alias, "target": target, **{k: v for k, v in entry.items() if k != "spec"}})
    return out


def split_fallbacks(value: str) -> list[str]:
    """`"gemini:gemini-2.5-pro; default:fast,default:chat"` → two specs (`;` or a newline separates
    them, since a comma is already the cascade inside one spec)."""
    return [part.strip() for part in value.replace("\n", ";").split(";") if part.strip()]


def alias_fallbacks(path: tuple[str, ...], settings: SettingsReader) -> list[str]:
    """The fallback chains (`ai.alias.<prefix>.<rest>.fallback`) of every alias on a resolution path."""
    specs: list[str] = []
    for element in path:
        prefix, _, rest = element.partition(":")
        value = settings.get(f"{ALIAS_PREFIX}{prefix.strip()}.{rest.strip()}{FALLBACK_SUFFIX}")
        if value:
            specs += split_fallbacks(value)
    return specs


_Found = tuple[str, str, str]


class _Resolver:
    def __init__(self, settings: SettingsReader, spec: str) -> None:
        self.settings = settings
        self.spec = spec
        self.path: list[str] = []

    def fail(self, reason: str, code: str) -> UnknownModelError:
        return UnknownModelError(self.spec, reason, code)

    def cascade(self, text: str, chain: tuple[str, ...]) -> _Found:
        elements = split_cascade(text)
        if not elements:
            raise self.fail(f"{text!r} has no usable elements", "malformed")
        missed: list[str] = []
        for index, element in enumerate(elements):
            found = self.element(element, chain, last=index == len(elements) - 1, missed=missed)
            if found is not None:
                return found
            missed.append(element)
        raise AssertionError("the last cascade element always resolves or raises")

    def element(
        self, element: str, chain: tuple[str, ...], *, last: bool, missed: list[str]
    ) -> _Found | None:
        self.path.append(element)
        if element in chain:
            raise self.fail("alias cycle: " + " → ".join((*chain, element)), "cycle")
        chain = (*chain, element)
        if len(chain) > MAX_DEPTH:
            raise self.fail(f"alias chain longer than {MAX_DEPTH} specs: " + " → ".join(chain), "too_deep")
        prefix, colon, rest = element.partition(":")
        prefix, rest = prefix.strip(), rest.strip()
        if not colon or not prefix or not rest:
            hint = bare_model_hint(element.strip(), self.settings) if not colon else None
            raise self.fail(
                f"element {element!r} is not <provider>:<model> or <namespace>:<alias>"
                + (f"; did you mean {hint}?" if hint else ""),
                "malformed",
            )
        direct = self.direct(prefix, rest)
        if direct is not None:
            return direct
        target = self.settings.get(f"{ALIAS_PREFIX}{prefix}.{rest}")
        if target and target.strip():
            return self.cascade(target.strip(), chain)
        if not last:
            return None
        if prefix == DEFAULT_NAMESPACE:
            return self.tenant_default(element)
        earlier = f" (earlier elements not configured either: {', '.join(missed)})" if missed else ""
        raise self.fail(
            f"{element!r} is neither a provider type ({', '.join(WIRE_TYPES)}), a named instance "
            f"(setting ai.provider.{prefix}.type) nor an alias (setting {ALIAS_PREFIX}{prefix}.{rest}){earlier}",
            "not_configured",
        )

    def direct(self, prefix: str, rest: str) -> _Found | None:
        if prefix in WIRE_TYPES:
            return prefix, prefix, rest
        key = f"ai.provider.{prefix}.type"
        declared = (self.settings.get(key) or "").strip()
        if not declared:
            return None
        if declared not in WIRE_TYPES:
            raise self.fail(
                f"{key} is {declared!r}, which is not a provider type (expected one of {', '.join(WIRE_TYPES)})",
                "unknown_type",
            )
        return declared, prefix, rest

    def tenant_default(self, trigger: str) -> _Found:
        provider = (self.settings.get(DEFAULT_PROVIDER_KEY) or "").strip()
        model = (self.settings.get(DEFAULT_MODEL_KEY) or "").strip()
        if not provider or not model:
            what = "is empty" if trigger.startswith("(") else "is not configured"
            raise self.fail(
                f"{trigger} {what} and there is no tenant default "
                f"(settings {DEFAULT_PROVIDER_KEY} and {DEFAULT_MODEL_KEY})",
                "no_default",
            )
        self.path.append(f"{provider}:{model}")
        found = self.direct(provider, model)
        if found is None:
            raise self.fail(
                f"{DEFAULT_PROVIDER_KEY} is {provider!r}, which is neither a provider type "
                f"({', '.join(WIRE_TYPES)}) nor a named instance (setting ai.provider.{provider}.type)",
                "bad_default",
            )
        return found

"""The LLM vendors (wire types) and what an instance of each needs (seed 002 §3 "Named Provider Instances").

A *wire type* is the protocol a chat adapter speaks; a *provider instance* is a name in settings
(`ai.provider.<instance>.{type,apiKey,baseUrl}`) that binds a wire type to one endpoint and key.
The default instance of each wire type has the type's own name, so `openai:gpt-4o` needs no
`ai.provider.openai.type` setting.

Base URL conventions (the value of `ai.provider.<instance>.baseUrl`, or the default below):

- `openai`: the API root *including* its version prefix, as OpenAI-wire gateways publish it
  (`https://api.openai.com/v1`, `https://api.deepseek.com/v1`, `https://openrouter.ai/api/v1`);
  the chat adapter appends `/chat/completions`, discovery `/models`.
- `anthropic`: the server root (`https://api.anthropic.com`); paths start with `/v1/`.
- `gemini`: the server root (`https://generativelanguage.googleapis.com`); paths start with `/v1beta/`.
- `ollama`, `ollama-cloud`: the server root; paths start with `/api/` (OpenAI-compatible `/v1/` exists too).
- `lmstudio`: the server root (`http://localhost:1234`); a trailing `/v1` is accepted and removed,
  since LM Studio users often copy the OpenAI-compatible URL.

Six vendors are built in, one per wire. An add-on adds a vendor that speaks one of those wires (an
OpenAI-compatible API, say) with one `WireType` record in the entry-point group
`zarniwoop.llm_vendors`; its name is then a provider type like the built-ins (`<name>:<model>`,
`ai.provider.<instance>.type: <name>`), keyed by its own `env_keys`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from ...contract.names import NAME_RULE, is_valid_name
from ...protocols import registered

log = logging.getLogger("zarniwoop.llm")

VENDOR_GROUP = "zarniwoop.llm_vendors"
"""The entry-point group an add-on registers a `WireType` record in (docs/llm-calls.md, "Adding a vendor")."""


class _ReadsSettings(Protocol):
    def get(self, key: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class WireType:
    """One vendor: everything Zarniwoop knows of it, in one record. Key resolution
    (`llm/choice/key.py`), discovery, model-id checks, the adapter choice and the console read it here."""

    name: str
    display_name: str
    default_base_url: str
    key_required: bool
    """True when the vendor's API refuses calls without a key (local servers need none)."""
    env_keys: tuple[str, ...] = ()
    """The operator's environment variables holding a key for the vendor's own endpoint, first set wins."""
    local: bool = False
    """A server on the user's machine (Ollama, LM Studio): keyless, probed before its models are listed."""
    speaks: str = ""
    """The built-in wire whose adapter, model-id rule and model listing the vendor uses (`openai` for an
    OpenAI-compatible vendor); empty for a built-in wire itself."""

    @property
    def wire(self) -> str:
        """The built-in wire this vendor's calls go over."""
        return self.speaks or self.name


_BUILT_IN: tuple[WireType, ...] = (
    WireType(
        "openai", "OpenAI (and OpenAI-wire gateways)", "https://api.openai.com/v1", True, ("OPENAI_API_KEY",)
    ),
    WireType("anthropic", "Anthropic", "https://api.anthropic.com", True, ("ANTHROPIC_API_KEY",)),
    WireType(
        "gemini",
        "Google Gemini",
        "https://generativelanguage.googleapis.com",
        True,
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    ),
    WireType("ollama", "Ollama", "http://localhost:11434", False, local=True),
    WireType("ollama-cloud", "Ollama Cloud", "https://ollama.com", True, ("OLLAMA_API_KEY",)),
    WireType("lmstudio", "LM Studio", "http://localhost:1234", False, local=True),
)


class Vendors(Mapping[str, WireType]):
    """Every vendor by name, in display order: the built-ins, then the records add-ons register in
    the entry-point group `zarniwoop.llm_vendors` (read once, on first use; `reload()` reads again).
    A record that is not a `WireType`, reuses a name, or speaks no built-in wire is logged and left out."""

    def __init__(self, built_in: tuple[WireType, ...]) -> None:
        self._built_in = {w.name: w for w in built_in}
        self._all: dict[str, WireType] | None = None

    def reload(self) -> None:
        self._all = None

    def _records(self) -> dict[str, WireType]:
        if self._all is None:
            found = dict(self._built_in)
            for name, record in registered(VENDOR_GROUP, "vendor"):
                problem = self._problem(record, found)
                if problem is None:
                    found[record.name] = record
                else:
                    log.warning("vendor entry point %s refused: %s", name, problem)
            self._all = found
        return self._all

    def _problem(self, record: object, found: Mapping[str, WireType]) -> str | None:
        if not isinstance(record, WireType):
            return f"{record!r} is not a WireType"
        if not is_valid_name(record.name):
            return f"vendor name {record.name!r} is not a name ({NAME_RULE}): it becomes an instance and a folder"
        if record.name in found:
            return f"vendor {record.name!r} is registered already"
        if record.speaks not in self._built_in or self._built_in[record.speaks].speaks:
            return f"vendor {record.name!r} speaks {record.speaks!r}; expected one of {', '.join(self._built_in)}"
        return None

    # `get` and `in` answered by the dict itself: a gateway call asks some dozen times, and the
    # Mapping defaults go through __getitem__ and a KeyError each time.
    def __getitem__(self, name: str) -> WireType:
        return (self._all or self._records())[name]

    def get(self, name: str, default: WireType | None = None) -> WireType | None:  # type: ignore[override]
        return (self._all or self._records()).get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in (self._all or self._records())

    def __iter__(self) -> Iterator[str]:
        return iter(self._records())

    def __len__(self) -> int:
        return len(self._records())


WIRE_TYPES = Vendors(_BUILT_IN)
"""Every vendor (wire type) by name, in display order: the one table of them."""


def wire_of(name: str) -> str:
    """The built-in wire a vendor's calls go over (`openai` for an OpenAI-compatible vendor)."""
    record = WIRE_TYPES.get(name)
    return record.wire if record is not None else name


def instance_display_name(settings: _ReadsSettings, instance: str) -> str | None:
    """`ai.provider.<instance>.displayName` (seed 002 §3a: the name people see for an instance),
    or None when unset — the instance id is shown then."""
    value = settings.get(f"ai.provider.{instance}.displayName")
    return value.strip() or None if isinstance(value, str) else None


def base_url_for(wire_type: str, configured: str | None) -> str:
    """The effective base URL of an instance: the configured one (normalised) or the type's default."""
    url = (configured or "").strip() or WIRE_TYPES[wire_type].default_base_url
    url = url.rstrip("/")
    if wire_of(wire_type) == "lmstudio" and url.endswith("/v1"):
        url = url[: -len("/v1")]
    return url


def uses_default_endpoint(wire_type: str, configured: str | None) -> bool:
    """True when the instance talks to the vendor's public endpoint (so a key is really needed)."""
    return base_url_for(wire_type, configured) == base_url_for(wire_type, None)

"""Zarniwoop: one research/search layer for LLM agents — many providers, one cascade, traceable answers.

    from zarniwoop import Zarniwoop

    async with Zarniwoop.open(config="zarniwoop.yaml", tenant="acme", project="review") as zw:
        result = await zw.search("crispr off-target", "academic")

Names are imported on first use (PEP 562; module-level helpers are `_`-prefixed so that
`dir(zarniwoop)` shows only the public API), so `import zarniwoop` — and the `zarniwoop` command's
`--help` — stay fast; the runtime, the HTTP client and the database load only when needed.
"""

import importlib as _importlib
import typing as _typing

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "Attempt": "zarniwoop.contract",
    "Availability": "zarniwoop.contract",
    "ConfigError": "zarniwoop.contract",
    "InvalidRequestError": "zarniwoop.contract",
    "Modality": "zarniwoop.contract",
    "NoProviderAvailableError": "zarniwoop.contract",
    "Outcome": "zarniwoop.contract",
    "QuotaExceededError": "zarniwoop.contract",
    "QuotaStatus": "zarniwoop.contract",
    "SearchHit": "zarniwoop.contract",
    "SearchRequest": "zarniwoop.contract",
    "SearchResult": "zarniwoop.contract",
    "SearchScope": "zarniwoop.contract",
    "Tier": "zarniwoop.contract",
    "ToolResult": "zarniwoop.tools",
    "Zarniwoop": "zarniwoop.api",
    "ZarniwoopError": "zarniwoop.contract",
    "ZarniwoopSync": "zarniwoop.api",
    "tool_definitions": "zarniwoop.tools.dialects",
}

__all__ = [
    "Attempt",
    "Availability",
    "ConfigError",
    "InvalidRequestError",
    "Modality",
    "NoProviderAvailableError",
    "Outcome",
    "QuotaExceededError",
    "QuotaStatus",
    "SearchHit",
    "SearchRequest",
    "SearchResult",
    "SearchScope",
    "Tier",
    "ToolResult",
    "Zarniwoop",
    "ZarniwoopError",
    "ZarniwoopSync",
    "__version__",
    "tool_definitions",
]

if _typing.TYPE_CHECKING:
    from .api import Zarniwoop, ZarniwoopSync
    from .contract import (
        Attempt,
        Availability,
        ConfigError,
        InvalidRequestError,
        Modality,
        NoProviderAvailableError,
        Outcome,
        QuotaExceededError,
        QuotaStatus,
        SearchHit,
        SearchRequest,
        SearchResult,
        SearchScope,
        Tier,
        ZarniwoopError,
    )
    from .tools import ToolResult
    from .tools.dialects import tool_definitions


def __getattr__(name: str) -> _typing.Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'zarniwoop' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # cache: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

"""The five tools on recorded provider bodies: one emulator scenario shared by the output-schema
tests, the third-party client tests and `scripts/tool_sizes.py`.

    settings = mount_recorded(emulator)          # openalex, wikipedia, brave (web recorded; media synthetic)
    for name, arguments in CALLS.items(): …       # each tool with realistic arguments

Every response body comes from `../shared/fixtures` (Brave's image/video/news verticals from the
synthetic ones in `tests/fixtures/brave/`, since only its web answer was recorded).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .emulator import Emulator
from .paths import fixture_bytes
from .providers_academic import add_openalex, add_wikipedia
from .providers_web import KEYS, mount_brave, synthetic_bytes
from .runtime import endpoint, only, write_config
from .served import Served, served

CALLS: dict[str, dict[str, Any]] = {
    "research_search": {"query": "paperqa retrieval agents", "modality": "academic", "maxResults": 5},
    "research_search_expert": {
        "query": "semantic kernel",
        "modality": "web",
        "maxResults": 5,
        "pinnedProviderId": "brave",
    },
    "research_rich": {"query": "semantic kernel", "maxResults": 3},
    "research_investigate": {"question": "what is semantic kernel", "maxResults": 5},
    "research_providers": {},
}
"""Realistic arguments for each tool against `mount_recorded`'s providers."""

FILTERED_EXPERT: dict[str, Any] = {
    **CALLS["research_search_expert"],
    "excludeDomains": ["github.com"],
    "timeRange": "year",
    "safeSearch": "strict",
    "region": "US",
}
"""`research_search_expert` with issue 47's filters, which Brave's wire takes natively: `-site:` in
`q`, `freshness=py`, `safesearch=strict`, `country=us`."""

REQUIRED_ONLY: dict[str, dict[str, Any]] = {
    "research_search": {"query": "semantic kernel", "modality": "web"},
    "research_search_expert": {"query": "semantic kernel", "modality": "web", "maxResults": 3},
    "research_rich": {"query": "semantic kernel", "maxResults": 2},
    "research_investigate": {"question": "what is semantic kernel"},
    "research_providers": {},
}
"""Each tool with only its required arguments, as a strict client's minimal call."""


def with_nulls(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The required-only call plus `null` for every optional parameter (what a strict model sends)."""
    optional = [p for p in schema["properties"] if p not in schema.get("required", [])]
    return {**REQUIRED_ONLY[name], **dict.fromkeys(optional)}


def mount_recorded(emulator: Emulator) -> dict[str, Any]:
    """Mount the providers on `emulator`; the settings that route every modality the tools use to them."""
    brave = mount_brave(
        emulator,
        {
            "/res/v1/web/search": fixture_bytes("brave", "web-search-what-is-semantic-kernel.json"),
            "/res/v1/images/search": synthetic_bytes("brave", "images-synthetic.json"),
            "/res/v1/videos/search": synthetic_bytes("brave", "videos-synthetic.json"),
            "/res/v1/news/search": synthetic_bytes("brave", "news-synthetic.json"),
        },
    )
    return {
        **only(),
        **endpoint("brave", "brave", brave, apiKey=KEYS["brave"], rateLimit__perSecond=1000),
        **endpoint("openalex", "openalex", add_openalex(emulator)),
        **endpoint("wikipedia", "wikipedia", add_wikipedia(emulator)),
        "research.endpoint.brave.enabled": True,
        "research.endpoint.openalex.enabled": True,
        "research.endpoint.wikipedia.enabled": True,
        "research.default.web": "brave",
        "research.cache.ttlSeconds": 0,
    }


@contextmanager
def served_recorded(directory: Path) -> Iterator[Served]:
    """A real `zarniwoop serve` over `mount_recorded` on an emulator of its own: one per test module
    whose tests only call the tools (the cache is off, so every test sees the same answers)."""
    emulator = Emulator().start()
    try:
        config = write_config(directory, {"settings": mount_recorded(emulator)})
        with served(config, directory / "home") as running:
            yield running
    finally:
        emulator.stop()


__all__ = ["CALLS", "FILTERED_EXPERT", "REQUIRED_ONLY", "mount_recorded", "served_recorded", "with_nulls"]

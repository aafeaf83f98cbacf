"""The investigation's spans (docs/observability.md): `zarniwoop.investigate` around the run and
`zarniwoop.research.<step>` around each step (plan, dedup, deepen, evaluate, refine, rerank,
insights); each planned search is its own `zarniwoop.search` span under the run.

When tracing is off, `step` is a `nullcontext` and nothing else is built."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from ..dispatch.spans import query_attributes, scope_attributes
from ..observability.tracing import TRACING, set_attributes, span

if TYPE_CHECKING:
    from ..config.settings import ScopedSettings
    from ..contract.query import SearchScope

_OFF: AbstractContextManager[Any] = nullcontext()


def run_span(question: str, scope: SearchScope, settings: ScopedSettings) -> AbstractContextManager[Any]:
    if not TRACING.on:
        return _OFF
    return span("zarniwoop.investigate", {**scope_attributes(scope), **query_attributes(question, settings)})


def step(name: str) -> AbstractContextManager[Any]:
    if not TRACING.on:
        return _OFF
    return span(f"zarniwoop.research.{name}", {"zarniwoop.research.step": name})


def note_strategy(strategy: str) -> None:
    """Which strategy ran the current step, and whether it was a fallback."""
    if TRACING.on:
        set_attributes(
            {
                "zarniwoop.research.strategy": strategy,
                "zarniwoop.research.fell_back": "(fallback: " in strategy,
            }
        )


__all__ = ["note_strategy", "run_span", "step"]

"""Progress of long work (the curated pipeline, the rich fan-out): typed steps for an observer.

A `ProgressObserver` is any async callable taking a `ProgressStep`; the surfaces turn steps into
MCP `notifications/progress`, Server-Sent Events and the CLI's progress display. `done` only grows
within a run and `total` is the current estimate (a refinement round adds to it), so a step maps
onto MCP's `progress`/`total` as it is. Plain data here; `research.progress.Tracker` counts them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

StepName = Literal[
    "plan", "search", "dedup", "deepen", "evaluate", "refine", "rerank", "insights", "modality"
]
"""`modality` is one `research_rich` section answered; the others are the curated pipeline's stages."""


@dataclass(frozen=True, slots=True)
class ProgressStep:
    step: StepName
    message: str
    done: int
    total: int | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    """Machine-readable facts of the step (`{"query", "modality", "providerInstanceId", "hits"}` for a search)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step": self.step, "message": self.message, "done": self.done}
        if self.total is not None:
            out["total"] = self.total
        if self.detail:
            out["detail"] = dict(self.detail)
        return out


ProgressObserver = Callable[[ProgressStep], Awaitable[None]]


__all__ = ["ProgressObserver", "ProgressStep", "StepName"]

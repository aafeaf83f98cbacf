"""Counting a run's progress steps and telling the observer (`contract.progress` has the types).

    async def show(step: ProgressStep) -> None:
        print(f"{step.done}/{step.total} {step.step}: {step.message}")

    await investigator.investigate(question, scope, progress=show)

A new pipeline stage is one more `Tracker.step(...)` call with its own step name; observers that do
not know the name still show its `message`. An observer that fails (a client that went away) never
fails the research: the error is logged once at debug level and no further steps are sent.
"""

from __future__ import annotations

import logging
from typing import Any

from ..contract.progress import ProgressObserver, ProgressStep, StepName

log = logging.getLogger(__name__)


class Tracker:
    """Counts a run's steps and tells the observer (if any); `expect(n)` widens the total."""

    def __init__(self, observer: ProgressObserver | None, total: int | None = None) -> None:
        self.observer = observer
        self.done = 0
        self.total = total
        self._failed = False

    def expect(self, more: int) -> None:
        self.total = (self.total or self.done) + more

    async def step(self, name: StepName, message: str, **detail: Any) -> None:
        self.done += 1
        if self.total is not None and self.done > self.total:
            self.total = self.done
        if self.observer is None or self._failed:
            return
        try:
            await self.observer(ProgressStep(name, message, self.done, self.total, detail))
        except Exception as exc:  # advisory: a vanished client must not cost the caller the answer
            self._failed = True
            log.debug("progress observer failed (%s); no further steps are sent", type(exc).__name__)


__all__ = ["ProgressObserver", "ProgressStep", "StepName", "Tracker"]

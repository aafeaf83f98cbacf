"""Finished steps kept for a run that may be resumed elsewhere (a task taken over, issue 45).

A long pipeline asks its `Checkpoint` before a step that costs money (a search) and tells it each
step it finished; a run resumed on another process then recalls those outputs instead of paying
for them again. `key` names the step (the pipeline hashes what makes it: modality, query, size);
values are plain JSON. `recall` may raise `asyncio.CancelledError` when the run was cancelled
meanwhile: the step is then never started.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Checkpoint(Protocol):
    async def recall(self, key: str) -> Mapping[str, Any] | None: ...

    async def keep(self, key: str, value: Mapping[str, Any]) -> None: ...


__all__ = ["Checkpoint"]

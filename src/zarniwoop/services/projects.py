"""Project lifecycle: stopping a project evicts its provider instances and its workspace."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..runtime import Runtime


def workspace_dir(runtime: Runtime, scope: SearchScope) -> str:
    return str(runtime.home / "workspace" / scope.tenant / scope.project)


async def stop_project(runtime: Runtime, scope: SearchScope) -> int:
    """Dispose the scope's instances (`dispose()` on each) and delete its workspace; returns the count."""
    disposed = await runtime.factory.dispose(scope)
    shutil.rmtree(workspace_dir(runtime, scope), ignore_errors=True)
    return disposed

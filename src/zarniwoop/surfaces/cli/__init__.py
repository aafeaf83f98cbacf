"""The `zarniwoop` command. Each command group lives in its own module and registers itself here.

Heavy modules (the runtime, aiohttp, the database, fastapi, uvicorn, mcp) are imported inside the
commands, so that `zarniwoop --help` starts fast.
"""

from __future__ import annotations

from . import (
    credentials,
    fetch_content,
    index_cmd,
    investigate,
    llm,
    mcp_cmd,
    models,
    oauth_cmd,
    projects,
    search,
    serve,
    settings_cmd,
    tasks_cmd,
    tokens,
    tools_cmd,
    usage,
)
from .app import app, main

for module in (
    search,
    tools_cmd,
    investigate,
    tasks_cmd,
    settings_cmd,
    projects,
    models,
    usage,
    fetch_content,
    index_cmd,
    tokens,
    oauth_cmd,
    serve,
    mcp_cmd,
    credentials,
    llm,
):
    module.register(app)

__all__ = ["app", "main"]

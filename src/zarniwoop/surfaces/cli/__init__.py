"""The `zarniwoop` command. Each command group lives in its own module and registers itself here.

Heavy modules (the runtime, httpx2, the database) are imported inside the commands, so that
`zarniwoop --help` starts fast.
"""

from __future__ import annotations

from . import credentials, fetch_content, investigate, llm, models, projects, search, settings_cmd, usage
from .app import app, main

for module in (search, investigate, settings_cmd, projects, models, usage, fetch_content, credentials, llm):
    module.register(app)

__all__ = ["app", "main"]

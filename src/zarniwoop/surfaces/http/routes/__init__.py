"""One router per resource; `app.py` includes them all."""

from . import admin, research, routing, settings, system, tools, usage, web

ROUTERS = (
    research.router,
    routing.router,
    tools.router,
    usage.router,
    admin.router,
    settings.router,
    system.router,
    web.router,
)

__all__ = ["ROUTERS"]

"""One router per resource; `app.py` includes them all."""

from . import admin, gateway, research, routing, system, tools, usage, web

ROUTERS = (
    gateway.router,
    research.router,
    routing.router,
    tools.router,
    usage.router,
    admin.router,
    system.router,
    web.router,
)

__all__ = ["ROUTERS"]

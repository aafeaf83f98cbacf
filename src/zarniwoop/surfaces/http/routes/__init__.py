"""One router per resource; `app.py` includes them all."""

from . import admin, gateway, image, research, routing, settings, system, tools, usage, web

ROUTERS = (
    gateway.router,
    research.router,
    routing.router,
    tools.router,
    usage.router,
    admin.router,
    settings.router,
    image.router,
    system.router,
    web.router,
)

__all__ = ["ROUTERS"]

"""One router per resource; `app.py` includes them all."""

from . import (
    admin,
    catalog,
    content,
    credentials,
    gateway,
    image,
    oauth,
    research,
    routing,
    settings,
    system,
    tasks,
    tokens,
    tools,
    usage,
    web,
)

ROUTERS = (
    gateway.router,
    research.router,
    tasks.router,
    content.router,
    routing.router,
    tools.router,
    usage.router,
    admin.router,
    settings.router,
    tokens.router,
    credentials.router,
    catalog.router,
    image.router,
    system.router,
    oauth.router,
    web.router,
)

__all__ = ["ROUTERS"]

"""One router per resource; `app.py` includes them all."""

from . import (
    admin,
    catalog,
    content,
    credentials,
    embeddings,
    gateway,
    image,
    messages,
    oauth,
    research,
    responses,
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
    messages.router,
    embeddings.router,
    responses.router,
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

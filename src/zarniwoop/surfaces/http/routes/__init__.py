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

# Starlette tries the routes in this order, one pattern match each: the hot paths first — a gateway
# call, a search, the liveness probe a load balancer sends every few seconds — then the rest.
ROUTERS = (
    gateway.router,
    research.router,
    system.router,
    messages.router,
    embeddings.router,
    responses.router,
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
    oauth.router,
    web.router,
)

__all__ = ["ROUTERS"]

"""`GET /healthz` (no token) and `GET /metrics` (Prometheus text; any valid token).

Metrics come from `runtime.extras["metrics"]` when a metrics service is attached (an object with
`render() -> bytes`), else from prometheus_client's default registry.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from .... import __version__
from ..deps import Ctx, CurrentPrincipal

router = APIRouter(tags=["system"])


@router.get("/healthz", summary="Liveness: answers while the server runs")
async def healthz() -> dict[str, str]:
    return {"status": "ok", "version": __version__}


@router.get("/metrics", summary="Prometheus metrics (text exposition format)")
async def metrics(ctx: Ctx, principal: CurrentPrincipal) -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

    service = ctx.runtime.extras.get("metrics")
    body = service.render() if service is not None else generate_latest(REGISTRY)
    return Response(content=body, media_type=CONTENT_TYPE_LATEST)

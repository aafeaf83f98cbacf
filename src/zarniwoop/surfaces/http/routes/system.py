"""`GET /healthz` (no token) and `GET /metrics` (Prometheus text of this process; operator tokens only:
the series name every tenant's provider instances)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse, Response

from .... import __version__
from ..deps import Operator
from ..errors import ErrorBody

router = APIRouter(tags=["system"])


@router.get("/healthz", summary="Liveness: answers while the server runs")
async def healthz() -> dict[str, str]:
    return {"status": "ok", "version": __version__}


_JSON_ERROR = {"application/json": {"schema": {"$ref": f"#/components/schemas/{ErrorBody.__name__}"}}}


@router.get(
    "/metrics",
    summary="Prometheus metrics (text exposition format)",
    response_class=PlainTextResponse,
    responses={  # errors are JSON, whatever the 200's text exposition format
        401: {"description": "Missing or invalid bearer token", "content": _JSON_ERROR},
        403: {"description": "Not an operator token", "content": _JSON_ERROR},
    },
)
async def metrics(operator: Operator) -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST

    from ....observability.metrics import render_metrics

    return Response(content=render_metrics(), media_type=CONTENT_TYPE_LATEST)

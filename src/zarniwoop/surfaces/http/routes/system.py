"""`GET /healthz` (no token), `GET /metrics` (Prometheus text of this process; operator tokens only:
the series name every tenant's provider instances) and `GET /v1/whoami` (any token: what it is bound
to, its role, and the scope this request acts on — the console's header says whose data it shows)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse, Response

from .... import __version__
from ..deps import Caller, Operator
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


@router.get("/v1/whoami", summary="The token's binding and role, and the scope this request acts on")
async def whoami(caller: Caller) -> dict[str, Any]:
    principal = caller.principal
    return {
        "tenant": caller.scope.tenant,
        "project": caller.scope.project,
        "binding": {"tenant": principal.tenant, "project": principal.project},
        "role": principal.role,
        "operator": principal.operator,
        "tenantAdmin": principal.tenant_admin,
        "account": principal.account,
        "profile": principal.profile,
    }

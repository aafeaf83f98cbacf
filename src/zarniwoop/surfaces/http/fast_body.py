"""A fast path for the JSON-body routes a search takes: `(body, request, caller)` endpoints.

FastAPI reads such a body with stdlib `json`, parses the `Content-Type` with `email.message`,
validates the dict through the body field, and resolves the `Caller` dependency with a pass over
its query, header, cookie and path parameters (issue 18's profile: about a tenth of a search's
CPU). When the request is the plain case — `Content-Type: application/json`, no query string
(so no `tenant`/`project` to validate) and a body the model accepts — this route validates the
raw bytes with the body model's `model_validate_json`, reads the caller as the dependency would
and calls the endpoint. Anything else (an invalid body, another content type, query parameters) goes to
FastAPI's own handler, unchanged: every 422 and 400 keeps FastAPI's shape, and the OpenAPI document
is built from the same declaration (`route.dependant`), so it does not change either.

    @router.post("/search", ...)
    @fast_body(SearchBody)
    async def search(body: SearchBody, request: Request, caller: Caller) -> JSONResponse: ...

    router = APIRouter(..., route_class=FastBodyRoute)

An endpoint that takes the `Request` alone and parses its body itself (the gateway's chat route,
whose OpenAPI body is declared by hand) is marked `request_only`: the route calls it as its handler,
with no dependency pass and no response serialisation between (FastAPI would resolve an empty
dependency set and hand the returned `Response` through unchanged; that was a twentieth of a
gateway call's CPU).

    @router.post("/v1/chat/completions", openapi_extra=...)
    @request_only
    async def chat_completions(request: Request) -> Response: ...
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from fastapi import Request
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.responses import Response

from .deps import get_caller

_ATTRIBUTE = "__zarniwoop_fast_body__"
_REQUEST_ONLY = "__zarniwoop_request_only__"
_RESOLVED = ("dependencies", "path_params", "query_params", "header_params", "cookie_params", "body_params")
"""What FastAPI would resolve for an endpoint: a `request_only` one has none of it."""
_Endpoint = TypeVar("_Endpoint", bound=Callable[..., Any])


def fast_body(model: type[BaseModel]) -> Callable[[_Endpoint], _Endpoint]:
    """Mark an `(body, request, caller)` endpoint for `FastBodyRoute`'s fast path, `body` a `model`."""

    def mark(endpoint: _Endpoint) -> _Endpoint:
        setattr(endpoint, _ATTRIBUTE, model)
        return endpoint

    return mark


def request_only(endpoint: _Endpoint) -> _Endpoint:
    """Mark a `(request) -> Response` endpoint, one with no parameter FastAPI resolves, to be the
    route's handler itself (`FastBodyRoute`)."""
    setattr(endpoint, _REQUEST_ONLY, True)
    return endpoint


class FastBodyRoute(APIRoute):
    """An `APIRoute` whose marked endpoints (`fast_body`) skip FastAPI's request machinery in the plain
    case; other endpoints, and every other case, are FastAPI's."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        if getattr(self.endpoint, _REQUEST_ONLY, False):
            if any(getattr(self.dependant, kind) for kind in _RESOLVED):
                raise TypeError(f"{self.endpoint.__name__}: a request_only endpoint takes the Request alone")
            itself: Callable[[Request], Coroutine[Any, Any, Response]] = self.endpoint
            return itself
        standard = super().get_route_handler()
        model: type[BaseModel] | None = getattr(self.endpoint, _ATTRIBUTE, None)
        if model is None:
            return standard
        endpoint = self.endpoint

        async def handler(request: Request) -> Response:
            scope = request.scope
            if scope.get("query_string") or request.headers.get("content-type") != "application/json":
                return await standard(request)
            raw = await request.body()  # kept on the request: FastAPI's handler reads it again
            try:
                body = model.model_validate_json(raw)
            except ValidationError:
                return await standard(request)  # FastAPI's 422, in FastAPI's shape
            caller = await get_caller(request)
            response: Response = await endpoint(body=body, request=request, caller=caller)
            return response

        return handler


__all__ = ["FastBodyRoute", "fast_body", "request_only"]

"""Who calls an LLM gateway route, and the one place a remembered token's revocation is settled.

Every gateway call — `/v1/chat/completions`, `/v1/messages`, `/v1/responses`, `/v1/embeddings`
(`deps.REMEMBERED_PATHS`) — takes its caller from `caller_of`: the principal the request guard
verified, or the one it recalled from memory for a token this process verified before
(`TokenStore.recall`, `deps.REMEMBERED_SCOPE_KEY`). A recalled principal is NOT yet known unrevoked:
`Caller.call()` names its token to the call (`LlmCall.check_token`), and the call's budget
reservation confirms it in its own storage round trip (`reserve(token=…)`,
`limits/revocation.py`) — issue 42: one round trip before the first upstream byte, on every route.
A call that failed before a reservation confirmed the token asks `live()` in `Caller.failure`, so a
revoked token gets the route's 401 (each route maps it to its API's error shape), never the
call's own error. `gateway_route` is the one frame of every such route: caller, handler, a client
gone (499), and each failure in the route's API's error shape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fastapi import Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException

from ...contract.errors import AccessDeniedError, RevokedTokenError
from ...llm.call import LlmCall
from ...tenancy.tokens import Principal
from .answering import ClientGone
from .deps import PRINCIPAL_SCOPE_KEY, REMEMBERED_SCOPE_KEY, authenticate_header
from .fast_body import request_only
from .state import AppState

ACCOUNT_REQUIRED = (
    "this token is not bound to an account; the gateway charges an account's budgets: "
    "create one with `zarniwoop tokens create --account NAME`"
)


def gateway_call(principal: Principal, check_token: str | None = None) -> LlmCall:
    """The token's tenant, project and account (and the token id its reservation confirms,
    `LlmCall.check_token`); `AccessDeniedError` for a token without an account."""
    if not principal.account:
        raise AccessDeniedError(ACCOUNT_REQUIRED)
    scope = principal.scope_for(None, None)
    return LlmCall(
        tenant=scope.tenant, project=scope.project, account=principal.account, check_token=check_token
    )


async def principal_of(request: Request, state: AppState, header: str | None = None) -> Principal:
    """`deps.get_principal` without the dependency: the guard's principal, else the one of `header`
    (by default `Authorization`; `/v1/messages` passes the `x-api-key` one where that came)."""
    verified = request.scope.get(PRINCIPAL_SCOPE_KEY)
    if isinstance(verified, Principal):
        return verified
    return await authenticate_header(state, header or request.headers.get("authorization"))


@dataclass(frozen=True, slots=True)
class Caller:
    """A gateway call's principal and, when the guard recalled it from memory, its token's id still
    to be confirmed unrevoked (`unconfirmed`)."""

    principal: Principal
    unconfirmed: str | None = None

    def call(self) -> LlmCall:
        """`gateway_call` of the principal, carrying the token its first reservation confirms."""
        return gateway_call(self.principal, self.unconfirmed)

    async def failure(self, state: AppState, exc: Exception) -> Exception:
        """The call's error, or the 401 of its remembered token found revoked — by the reservation,
        or here when the call failed before one confirmed it: a revoked token learns nothing of
        the call. A token found revoked is forgotten: its next request is refused by the guard."""
        token_id = self.unconfirmed
        if not isinstance(exc, RevokedTokenError):
            if token_id is None:
                return exc
            try:
                if await state.tokens.live(token_id):
                    return exc
            except Exception:  # the database is away: the call's own error (it served nothing)
                return exc
        if token_id is not None:
            state.tokens.forget(token_id)
        return HTTPException(401, "invalid or revoked token", state.challenge("invalid_token"))


async def caller_of(request: Request, state: AppState, header: str | None = None) -> Caller:
    """The caller of a gateway route: the guard's recalled principal (to be confirmed by the call),
    else `principal_of` — a 401 `HTTPException` for a missing or bad token."""
    remembered = request.scope.get(REMEMBERED_SCOPE_KEY)
    if isinstance(remembered, Principal):
        return Caller(remembered, remembered.token_id)
    return Caller(await principal_of(request, state, header))


async def failure(state: AppState, caller: Caller | None, exc: Exception) -> Exception:
    """`Caller.failure`, or the error itself where the caller was not yet known (its 401)."""
    return exc if caller is None else await caller.failure(state, exc)


Handler = Callable[[Request, AppState, LlmCall], Awaitable[Response]]
"""A gateway route's work: the request, the app's state and the call its caller makes."""


def gateway_route(
    answer_error: Callable[[Exception], Response],
    header: Callable[[Request], str | None] | None = None,
) -> Callable[[Handler], Callable[[Request], Awaitable[Response]]]:
    """The frame of a gateway route (a `request_only` endpoint): its caller (`caller_of`, the token
    of `header(request)` where the API names another header), the handler under the call it makes,
    499 for a client gone (`ClientGone`), and every failure — a missing or bad token's 401 too —
    answered by `answer_error` in the route's API's shape, after `failure` (a remembered token
    found revoked: its 401, never the call's error)."""

    def frame(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            # State and principal read here, not through `Ctx`/`CurrentPrincipal`: each dependency
            # costs FastAPI a resolution pass per call (a twentieth of a gateway call's CPU).
            state: AppState = request.app.state.zarniwoop
            caller: Caller | None = None
            try:
                caller = await caller_of(request, state, None if header is None else header(request))
                return await handler(request, state, caller.call())  # no account, no work
            except ClientGone:
                return Response(status_code=499)
            except Exception as exc:
                return answer_error(await failure(state, caller, exc))

        endpoint.__name__, endpoint.__qualname__ = handler.__name__, handler.__qualname__
        endpoint.__doc__ = handler.__doc__
        return request_only(endpoint)

    return frame


__all__ = [
    "ACCOUNT_REQUIRED",
    "Caller",
    "Handler",
    "caller_of",
    "failure",
    "gateway_call",
    "gateway_route",
    "principal_of",
]

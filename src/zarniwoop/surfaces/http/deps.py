"""Dependencies of the HTTP routes, as `Annotated[..., Depends()]` aliases.

    async def handler(ctx: Ctx, caller: Caller) -> ...:      # authenticated, scope resolved
    async def handler(ctx: Ctx, admin: AdminCaller) -> ...:  # the same, admin role required

Every dependency is `async def`: FastAPI runs plain `def` dependencies on a thread pool, which
costs a thread hop per dependency per request.

A request acts on the scope its token is bound to; `?tenant=` / `?project=` may name it
explicitly (operator tokens bound to `*` need them to leave `default`), and naming a scope the
token is not bound to is a 403.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Path, Query, Request

from ...contract.errors import AccessDeniedError, OAuthTokenError, ScopeRequiredError
from ...contract.names import MAX_NAME_CHARS, NAME_RULE
from ...contract.query import SearchScope
from ...contract.replacing import slot_init
from ...dispatch.profiles import GLOBAL_ORDER, ProfileChoice
from ...tenancy.tokens import Principal
from .state import AppState

PRINCIPAL_SCOPE_KEY = "zarniwoop.principal"
"""Where `guard.RequestGuard` leaves the principal it verified before the body was read."""
REMEMBERED_SCOPE_KEY = "zarniwoop.remembered"
"""Where the guard leaves, on `REMEMBERED_PATHS`, a principal recalled from memory and NOT yet
confirmed unrevoked (`TokenStore.recall`): only a gateway route reads it, through
`gateway_caller.caller_of`, whose call's reservation confirms it (issue 42); any other reader
verifies the token as before."""
REMEMBERED_PATHS = frozenset(("/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1/embeddings"))
"""The LLM gateway's calls (`gateway_caller.caller_of`); not `/v1/messages/count_tokens`, nor a
stored response's `GET`/`DELETE`, which reserve nothing that could confirm the token."""


async def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.zarniwoop  # Starlette's `State` is untyped; `create_app` sets this
    return state


Ctx = Annotated[AppState, Depends(get_state)]

RecordId = Annotated[str, Path(max_length=100, pattern=r"^[A-Za-z0-9_\-]+$")]
"""A stored record's id in a URL path (an API token's, an OAuth grant's or sign-in request's)."""


def bearer_token(header: str) -> str | None:
    """The token of `Bearer <token>`; None for another scheme or none."""
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def recall_header(state: AppState, header: str | None) -> Principal | None:
    """The principal the process remembers for this header's API token (`TokenStore.recall`): its
    binding, not yet confirmed unrevoked. None when it remembers none (then: `authenticate_header`)."""
    token = bearer_token(header) if header else None
    return state.tokens.recall(token) if token else None


async def authenticate_header(state: AppState, header: str | None) -> Principal:
    """The principal of an `Authorization: Bearer <token>` header; a 401 `HTTPException` otherwise
    (with `auth: oauth`, its `WWW-Authenticate` names the protected-resource metadata, RFC 9728)."""
    if not header:
        raise HTTPException(
            401, "missing bearer token: send Authorization: Bearer <token>", state.challenge()
        )
    token = bearer_token(header)
    if token is None:
        raise HTTPException(401, "expected Authorization: Bearer <token>", state.challenge())
    try:
        principal = await state.authenticate(token)
    except OAuthTokenError as exc:  # the description names the failed check, never the token
        raise HTTPException(exc.status, exc.message, state.challenge(exc.error, exc.message)) from None
    if principal is None:
        raise HTTPException(401, "invalid or revoked token", state.challenge("invalid_token"))
    return principal


async def get_principal(request: Request, state: Ctx) -> Principal:
    verified = request.scope.get(PRINCIPAL_SCOPE_KEY)
    if isinstance(verified, Principal):  # the guard checked the token before reading the body
        return verified
    return await authenticate_header(state, request.headers.get("authorization"))


CurrentPrincipal = Annotated[Principal, Depends(get_principal)]


PROFILE_HEADER = "Zarniwoop-Profile"
"""The agent profile a request's searches route through (docs/providers.md, "Agent profiles")."""


@slot_init
@dataclass(frozen=True, slots=True)
class CallerInfo:
    principal: Principal
    scope: SearchScope
    profile: ProfileChoice = GLOBAL_ORDER
    """The `Zarniwoop-Profile` header and the token's profile binding."""

    @property
    def admin(self) -> bool:
        return self.principal.admin


NAME_PARAM: dict[str, Any] = {
    "max_length": MAX_NAME_CHARS,
    "json_schema_extra": {"pattern": f"^{NAME_RULE}$", "minLength": 1},
}
"""A tenant or project parameter: the one name rule (`contract/names.py`) in the OpenAPI document;
`check_name` enforces it, with its own message, when the scope is resolved."""


async def get_caller(
    request: Request,
    tenant: Annotated[str | None, Query(description="Tenant (default: the token's).", **NAME_PARAM)] = None,
    project: Annotated[str | None, Query(description="Project (default: the token's).", **NAME_PARAM)] = None,
) -> CallerInfo:
    # the principal read here, not through `CurrentPrincipal`: each nested dependency costs FastAPI a
    # resolution pass per request (issue 18's profile: a tenth of a search's CPU went to them)
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY)
    if not isinstance(principal, Principal):
        state: AppState = request.app.state.zarniwoop
        principal = await authenticate_header(state, request.headers.get("authorization"))
    choice = ProfileChoice(request.headers.get(PROFILE_HEADER) or None, principal.profile)
    choice.pick()  # a malformed header, or one the token's binding forbids: refused before any work
    try:
        scope = principal.scope_for(tenant, project)
    except ScopeRequiredError as exc:  # say what this route needs the scope for
        raise ScopeRequiredError(exc.field, scope_needed_by(request.url.path)) from None
    return CallerInfo(principal, scope, choice)


_SCOPE_NEEDS = (
    ("/v1/research", "research tools"),
    ("/v1/tools", "research tools"),
    ("/mcp", "research tools"),
    ("/v1/settings", "settings"),
    ("/v1/setting-forms", "settings"),
    ("/v1/credentials", "credentials"),
    ("/v1/tokens", "tokens"),
    ("/v1/usage", "usage reports"),
    ("/v1/content", "content fetches"),
    ("/v1/admin", "admin actions"),
    ("/v1/_routing", "routing views"),
    ("/v1/profiles", "profiles"),
)


def scope_needed_by(path: str) -> str:
    """What a route needs a `(tenant, project)` scope for, in its scope error."""
    return next((needs for prefix, needs in _SCOPE_NEEDS if path.startswith(prefix)), f"calls to {path}")


Caller = Annotated[CallerInfo, Depends(get_caller)]


async def get_admin_caller(caller: Caller) -> CallerInfo:
    if not caller.admin:
        raise AccessDeniedError("this needs an admin token")
    return caller


AdminCaller = Annotated[CallerInfo, Depends(get_admin_caller)]


async def get_operator(principal: CurrentPrincipal) -> Principal:
    if not principal.operator:
        raise AccessDeniedError("this needs an operator token (an admin token bound to tenant '*')")
    return principal


Operator = Annotated[Principal, Depends(get_operator)]

__all__ = [
    "NAME_PARAM",
    "PRINCIPAL_SCOPE_KEY",
    "PROFILE_HEADER",
    "AdminCaller",
    "Caller",
    "CallerInfo",
    "Ctx",
    "CurrentPrincipal",
    "Operator",
    "authenticate_header",
]

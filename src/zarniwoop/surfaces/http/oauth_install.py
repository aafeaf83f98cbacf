"""`auth: oauth` installed on the app: the configured issuers' access tokens taken, and with
`auth.builtin` the built-in authorization server (`oauth_server.BuiltinAuthServer`) behind the MCP
SDK's endpoints — `/register` behind its bounds (`oauth_register.RegistrationGate`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...tenancy.oauth import ROLE_SCOPES

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ...runtime import Runtime
    from .state import AppState


def install_oauth(app: FastAPI, state: AppState, rt: Runtime) -> None:
    """`auth: oauth`: take the configured issuers' access tokens; with `auth.builtin` also be one,
    serving the SDK's authorization-server endpoints with `BuiltinAuthServer` behind them."""
    from mcp.server.auth.routes import REGISTRATION_PATH, create_auth_routes
    from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
    from starlette.routing import Route

    from ...config.file import OAuthIssuerConfig
    from ...tenancy.oauth import OAuthVerifier
    from .oauth_register import RegistrationGate
    from .oauth_server import BuiltinAuthServer

    config = rt.config.auth
    verifier = OAuthVerifier(config, rt.transport, clock=rt.clock)
    if config.builtin:
        issuer = verifier.resource.rstrip("/")
        server = BuiltinAuthServer(
            rt.db,
            rt.box,
            issuer=issuer,
            resource=verifier.resource,
            access_token_seconds=config.access_token_seconds,
            clock=rt.clock,
            live_ephemeral=lambda: {p.token_id for p in state.ephemeral.values() if p.token_id},
        )
        verifier.trust_local(
            OAuthIssuerConfig(
                issuer=issuer, jwks_uri=f"{issuer}/oauth/jwks", algorithms=["ES256"], leeway_seconds=0
            ),
            server.keys,
        )
        state.auth_server = server
        routes = create_auth_routes(
            provider=server,
            issuer_url=exact_url(issuer),
            # a client registered without `scope` may ask for any the consent can grant (issue 45):
            # the role is the admin's choice on the consent page, not the client's
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=list(ROLE_SCOPES), default_scopes=list(ROLE_SCOPES)
            ),
            revocation_options=RevocationOptions(enabled=True),
        )
        for route in routes:
            if isinstance(route, Route) and route.path == REGISTRATION_PATH:
                route.app = RegistrationGate(route.app, rt, server.unused_clients)
        app.router.routes.extend(routes)
    state.use_oauth(verifier)


def exact_url(url: str) -> Any:
    """`url` as pydantic's `AnyHttpUrl`, without the `/` it adds to an empty path: the metadata's
    `issuer` must equal the tokens' `iss` (RFC 8414 §3.3), and the SDK's model keeps it as given."""
    from mcp.shared.auth import OAuthMetadata

    fields = {"issuer": url, "authorization_endpoint": url, "token_endpoint": url}
    return OAuthMetadata.model_validate(fields).issuer


__all__ = ["exact_url", "install_oauth"]

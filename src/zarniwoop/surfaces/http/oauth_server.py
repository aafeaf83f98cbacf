"""The built-in OAuth 2.1 authorization server (`auth.builtin: true`), for an install with no IdP.

The endpoints are the MCP SDK's (`mcp.server.auth.routes.create_auth_routes`: RFC 8414 metadata at
`/.well-known/oauth-authorization-server`, `/authorize` — authorization code with PKCE, S256 only —,
`/token`, `/register` for dynamic client registration (RFC 7591), `/revoke`); this module is the
`OAuthAuthorizationServerProvider` behind them, on the database so that any worker or replica
answers any step:

- `/authorize` parks the request and sends the browser to the consent page of the web console
  (`/oauth/consent?request=…`); a signed-in admin grants it a tenant, project and role there
  (`POST /v1/oauth/requests/{id}`, `routes/oauth.py`) — never more than the admin holds — and the
  browser goes back to the client's `redirect_uri` with a single-use code (5 minutes, SHA-256 only);
- access tokens are JWTs signed with this server's own ES256 key (sealed in the database with the
  master key), `aud` = `auth.resource`, valid `auth.accessTokenSeconds` (600): the same
  `tenancy.oauth.OAuthVerifier` checks them as an external issuer's, the scope `zarniwoop:<role>`
  and the granted tenant and project in its claims;
- refresh tokens are opaque, stored as SHA-256, and rotate: each use returns a new one and retires
  the old; a retired token used again is refused and revokes its whole family (RFC 9700 §4.14);
- a grant is tied to the admin token that approved it (`tenancy/oauth_grants.py`): revoked or
  demoted, and the next refresh is refused; `/register` is bounded (`oauth_register.py`).

The tokens' `iss` is the metadata's `issuer` character for character (RFC 8414 §3.3): the public
URL without a trailing `/`.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    IdentityAssertionParams,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from ...contract.errors import InvalidRequestError
from ...limits.clock import Clock
from ...tenancy.oauth_grants import GrantStore, approver_of, may_grant
from ...tenancy.tokens import ANY, Principal
from .oauth_register import redirect_uri_problem

if TYPE_CHECKING:
    from ...storage.crypto import SecretBox
    from ...storage.db import Database

CODE_SECONDS = 300
REQUEST_SECONDS = 600
REFRESH_SECONDS = 30 * 86400
PENDING_PER_CLIENT = 20
"""Sign-in requests one client may have waiting for consent: `/authorize` needs no token, so each
client's parked rows are bounded (and clients themselves are, `oauth_register.py`)."""


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class GrantedCode(AuthorizationCode):
    grant: dict[str, Any]


class GrantedRefreshToken(RefreshToken):
    grant: dict[str, Any]
    family: str


class BuiltinAuthServer:
    def __init__(
        self,
        db: Database,
        box: SecretBox,
        *,
        issuer: str,
        resource: str,
        access_token_seconds: int = 600,
        clock: Clock | None = None,
        live_ephemeral: Callable[[], Collection[str]] = frozenset,
    ) -> None:
        self.db = db
        self.box = box
        self.issuer = issuer.rstrip("/")
        """The `iss` of the tokens and the metadata's `issuer`: no trailing `/` (RFC 8414 §3.3)."""
        self.resource = resource
        self.access_token_seconds = access_token_seconds
        self.clock = clock or Clock()
        """Dates the codes, refresh tokens and keys, and tells when one has expired."""
        self.grants = GrantStore(db)
        self.live_ephemeral = live_ephemeral
        """The ids of the admin tokens living in this process (`serve`'s printed one) right now."""
        self._signing: tuple[str, ec.EllipticCurvePrivateKey] | None = None

    # -- signing keys ---------------------------------------------------------------------------

    async def signing_key(self) -> tuple[str, ec.EllipticCurvePrivateKey]:
        """The oldest key in the database (every worker picks the same), made on first use."""
        if self._signing is None:
            row = await self._oldest_key()
            if row is None:
                key = ec.generate_private_key(ec.SECP256R1())
                pem = key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                ).decode()
                kid = "zw-" + secrets.token_hex(8)
                await self.db.execute(
                    "INSERT INTO oauth_signing_keys (kid, sealed_key, created_at) VALUES (?, ?, ?)"
                    " ON CONFLICT (kid) DO NOTHING",
                    (kid, self.box.seal(pem, aad=kid.encode()), self.clock.now()),
                )
                row = await self._oldest_key()
                assert row is not None
            kid, sealed = str(row[0]), str(row[1])
            loaded = serialization.load_pem_private_key(
                self.box.open(sealed, aad=kid.encode()).encode(), None
            )
            assert isinstance(loaded, ec.EllipticCurvePrivateKey)
            self._signing = (kid, loaded)
        return self._signing

    async def _oldest_key(self) -> tuple[Any, ...] | None:
        return await self.db.fetchone(
            "SELECT kid, sealed_key FROM oauth_signing_keys ORDER BY created_at, kid LIMIT 1"
        )

    async def keys(self) -> dict[str | None, jwt.PyJWK]:
        """The public keys, as the verifier takes an issuer's JWKS."""
        kid, key = await self.signing_key()
        public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
        return {kid: jwt.PyJWK({**public, "kid": kid, "alg": "ES256", "use": "sig"})}

    # -- clients (RFC 7591) ---------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        row = await self.db.fetchone("SELECT info FROM oauth_clients WHERE client_id = ?", (client_id,))
        if row is None:
            return None
        return OAuthClientInformationFull.model_validate_json(
            self.box.open(str(row[0]), aad=client_id.encode())
        )

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        for uri in client_info.redirect_uris or []:
            problem = redirect_uri_problem(str(uri))
            if problem is not None:
                raise RegistrationError("invalid_redirect_uri", f"redirect_uris: {problem}")
        client_id = str(client_info.client_id)
        sealed = self.box.seal(client_info.model_dump_json(), aad=client_id.encode())  # its secret, if any
        await self.db.execute(
            "INSERT INTO oauth_clients (client_id, info, created_at) VALUES (?, ?, ?)",
            (client_id, sealed, self.clock.now()),
        )

    async def unused_clients(self) -> int:
        """Registered clients that never got a token (the registration cap counts them)."""
        row = await self.db.fetchone("SELECT COUNT(*) FROM oauth_clients WHERE used_at IS NULL")
        return int(row[0]) if row else 0

    # -- authorization: request → consent → code ------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource is not None and params.resource.rstrip("/") != self.resource.rstrip("/"):
            raise AuthorizeError("invalid_target", "this server issues tokens for its own resource only")
        client_id, now = str(client.client_id), self.clock.now()
        await self.db.execute(
            "DELETE FROM oauth_requests WHERE client_id = ? AND expires_at <= ?", (client_id, now)
        )
        row = await self.db.fetchone("SELECT COUNT(*) FROM oauth_requests WHERE client_id = ?", (client_id,))
        if row is not None and int(row[0]) >= PENDING_PER_CLIENT:
            raise AuthorizeError(
                "temporarily_unavailable",
                f"{PENDING_PER_CLIENT} sign-in requests of this client wait for consent; answer or let them expire",
            )
        request_id = "req_" + secrets.token_urlsafe(16)
        await self.db.execute(
            "INSERT INTO oauth_requests (id, client_id, params, expires_at) VALUES (?, ?, ?, ?)",
            (request_id, client_id, params.model_dump_json(), now + REQUEST_SECONDS),
        )
        return f"{self.issuer}/oauth/consent?{urlencode({'request': request_id})}"

    async def pending(self, request_id: str) -> tuple[OAuthClientInformationFull, AuthorizationParams]:
        row = await self.db.fetchone(
            "SELECT client_id, params FROM oauth_requests WHERE id = ? AND expires_at > ?",
            (request_id, self.clock.now()),
        )
        client = await self.get_client(str(row[0])) if row is not None else None
        if row is None or client is None:
            raise InvalidRequestError(
                "request", "no pending sign-in request with this id (expired, or answered)"
            )
        return client, AuthorizationParams.model_validate_json(str(row[1]))

    async def decide(
        self, request_id: str, granter: Principal, *, approve: bool, tenant: str, project: str, role: str
    ) -> str:
        """Answer a consent: the client's redirect URL, with a code (approved) or `access_denied`."""
        client, params = await self.pending(request_id)
        redirect = str(params.redirect_uri)
        # never send a browser to a URI the client did not register, nor to a kind no client may
        # register (a `javascript:` URI from before registration was bounded, issue 45)
        problem = redirect_uri_problem(redirect)
        if problem is not None or redirect not in {str(uri) for uri in client.redirect_uris or []}:
            raise InvalidRequestError("redirect_uri", problem or "is not one the client registered")
        approver = None
        if approve:
            may_grant(granter, tenant, project, role)
            approver = approver_of(granter)
        deleted = await self.db.execute("DELETE FROM oauth_requests WHERE id = ?", (request_id,))
        if not deleted:
            raise InvalidRequestError(
                "request", "no pending sign-in request with this id (expired, or answered)"
            )
        if not approve:
            return construct_redirect_uri(redirect, error="access_denied", state=params.state)
        code = secrets.token_urlsafe(32)
        grant = {
            "tenant": tenant,
            "project": ANY if role == "tenant-admin" else project,
            "role": role,
            "approver": approver,
            "grantedAt": self.clock.now(),
        }
        data = {**params.model_dump(mode="json"), "grant": grant}
        await self.db.execute(
            "INSERT INTO oauth_codes (code_hash, client_id, data, expires_at) VALUES (?, ?, ?, ?)",
            (_hash(code), str(client.client_id), json.dumps(data), self.clock.now() + CODE_SECONDS),
        )
        return construct_redirect_uri(redirect, code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> GrantedCode | None:
        row = await self.db.fetchone(
            "SELECT data, expires_at FROM oauth_codes WHERE code_hash = ? AND client_id = ?",
            (_hash(authorization_code), str(client.client_id)),
        )
        if row is None:
            return None
        data = json.loads(str(row[0]))
        return GrantedCode(
            code=authorization_code,
            scopes=[f"zarniwoop:{data['grant']['role']}"],
            expires_at=float(row[1]),
            client_id=str(client.client_id),
            code_challenge=data["code_challenge"],
            redirect_uri=data["redirect_uri"],
            redirect_uri_provided_explicitly=data["redirect_uri_provided_explicitly"],
            resource=self.resource,
            grant=data["grant"],
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: GrantedCode
    ) -> OAuthToken:
        used = await self.db.execute(
            "DELETE FROM oauth_codes WHERE code_hash = ?", (_hash(authorization_code.code),)
        )
        if not used:  # a concurrent exchange took it: a code is good once
            raise TokenError("invalid_grant", "authorization code already used")
        await self.db.execute(  # a client with a token is no longer an unused registration
            "UPDATE oauth_clients SET used_at = ? WHERE client_id = ? AND used_at IS NULL",
            (self.clock.now(), str(client.client_id)),
        )
        return await self._issue(
            str(client.client_id), authorization_code.grant, "fam_" + secrets.token_hex(12)
        )

    # -- tokens ---------------------------------------------------------------------------------

    async def _issue(self, client_id: str, grant: dict[str, Any], family: str) -> OAuthToken:
        kid, key = await self.signing_key()
        now = int(self.clock.now())
        claims = {
            "iss": self.issuer,
            "aud": self.resource,
            "sub": f"client:{client_id}",
            "client_id": client_id,
            "scope": f"zarniwoop:{grant['role']}",
            "zarniwoop_tenant": grant["tenant"],
            "zarniwoop_project": grant["project"],
            "iat": now,
            "nbf": now,
            "exp": now + self.access_token_seconds,
            "jti": secrets.token_hex(12),
        }
        access = jwt.encode(claims, key, algorithm="ES256", headers={"kid": kid})
        refresh = "zwr_" + secrets.token_urlsafe(32)
        await self.db.execute(
            "INSERT INTO oauth_refresh_tokens (token_hash, client_id, family, grant_data, expires_at, tenant)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                _hash(refresh),
                client_id,
                family,
                json.dumps(grant),
                self.clock.now() + REFRESH_SECONDS,
                grant["tenant"],
            ),
        )
        return OAuthToken(
            access_token=access,
            expires_in=self.access_token_seconds,
            scope=claims["scope"],
            refresh_token=refresh,
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> GrantedRefreshToken | None:
        row = await self.db.fetchone(
            "SELECT family, grant_data, expires_at, used_at FROM oauth_refresh_tokens"
            " WHERE token_hash = ? AND client_id = ?",
            (_hash(refresh_token), str(client.client_id)),
        )
        if row is None:
            return None
        if row[3] is not None:  # replayed: someone holds a copy; end the whole grant
            await self.db.execute("DELETE FROM oauth_refresh_tokens WHERE family = ?", (row[0],))
            return None
        grant = json.loads(str(row[1]))
        if not await self.grants.approver_holds(grant, self.live_ephemeral()):
            # the approving admin token was revoked or demoted: the grant ends with it
            await self.db.execute("DELETE FROM oauth_refresh_tokens WHERE family = ?", (row[0],))
            return None
        return GrantedRefreshToken(
            token=refresh_token,
            client_id=str(client.client_id),
            scopes=[f"zarniwoop:{grant['role']}"],
            expires_at=int(row[2]),
            resource=self.resource,
            grant=grant,
            family=str(row[0]),
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: GrantedRefreshToken, scopes: list[str]
    ) -> OAuthToken:
        rotated = await self.db.execute(
            "UPDATE oauth_refresh_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL",
            (self.clock.now(), _hash(refresh_token.token)),
        )
        if not rotated:
            raise TokenError("invalid_grant", "refresh token already used")
        return await self._issue(str(client.client_id), refresh_token.grant, refresh_token.family)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None  # access tokens are JWTs, checked by the verifier; they end by expiring

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "identity assertions are not accepted here")

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        if isinstance(token, GrantedRefreshToken):
            await self.db.execute("DELETE FROM oauth_refresh_tokens WHERE family = ?", (token.family,))


__all__ = ["BuiltinAuthServer"]

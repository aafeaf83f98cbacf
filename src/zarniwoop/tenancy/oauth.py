"""OAuth 2.1 access tokens of an external authorization server, validated here (issue 26).

`serve --auth oauth` (or `auth: {mode: oauth}` in the config file) makes Zarniwoop an OAuth resource
server beside its own API tokens: a bearer token that is a JWT from a configured issuer is checked
locally against that issuer's JWKS — signature (only the issuer's asymmetric algorithms; `none` and
shared-secret algorithms never), `iss`, `aud` = `auth.resource` (RFC 8707: a token for another
resource is refused), `exp` and `nbf` (with `leewaySeconds`), and a role scope — and becomes a
`Principal` by the claim mapping (docs/oauth.md):

    tenant   the issuer's fixed `tenant`, else the claim `claims.tenant` (default `zarniwoop_tenant`)
    project  the claim `claims.project` (default `zarniwoop_project`), else the issuer's `project`,
             else `default`; a tenant-admin acts on every project of its tenant (`*`)
    role     the highest of the scopes `zarniwoop:user` < `zarniwoop:admin` < `zarniwoop:tenant-admin`
             in the claim `claims.role` (`scope`, space-separated, or a list such as `scp`)
    account  the claim `claims.account` when set (a user acting as that account)

Every name passes the one name rule, so an OAuth identity is never the operator (tenant `*`).
The JWKS is fetched through the project's one HTTP client (`zarniwoop.transport`), cached, and
fetched again for a `kid` it does not hold — at most once per `auth.jwksRefetchSeconds`, so a forged
`kid` cannot make every request a fetch; a key still unknown after that is refused. Fetches are
single-flight per issuer: concurrent requests share the one fetch under way, and none waits for it
longer than `JWKS_DEADLINE_SECONDS` after it started (on the injected clock); a fetch that failed or
missed that deadline is remembered for `JWKS_RETRY_SECONDS` (a negative cache), during which requests
naming the issuer are answered at once — so a hanging JWKS cannot pile requests up. Issuer URLs come
from the operator's config file only (no tenant sets one), so the fetch is not SSRF-guarded, as the
operator's own endpoints are not.

Refusals are `OAuthTokenError`: an RFC 6750 error code and a description that names the failed
check, never the token, a key or a claim's value.

    verifier = OAuthVerifier(config.auth, transport)
    principal = await verifier.verify(token)       # or OAuthTokenError
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jwt

from ..contract.clock import Clock
from ..contract.errors import ConfigError, InvalidRequestError, OAuthTokenError, ZarniwoopError
from ..contract.names import check_name
from ..contract.protocol import RequestSpec
from .tokens import ANY, Principal

if TYPE_CHECKING:
    from ..config.file import AuthConfig, OAuthIssuerConfig
    from ..transport.http import HttpTransport

ROLE_SCOPES = ("zarniwoop:user", "zarniwoop:admin", "zarniwoop:tenant-admin")
"""The scopes that mirror the roles, lowest first; a token's highest one is its role."""
JWKS_MAX_BYTES = 256 * 1024
JWKS_DEADLINE_SECONDS = 3.0
"""The longest any request waits for an issuer's keys, its own fetch or another request's."""
JWKS_RETRY_SECONDS = 10.0
"""After a failed or timed-out fetch, the issuer's keys are not asked for again for this long."""


def looks_like_jwt(token: str) -> bool:
    """A compact JWS (three dot-separated parts); Zarniwoop's own tokens (`zw_…`) never are."""
    return token.count(".") == 2 and not token.startswith("zw_")


@dataclass
class _KeySet:
    keys: dict[str | None, jwt.PyJWK]
    fetched_at: float


@dataclass
class _Flight:
    """One issuer's fetch under way, shared by every request that needs its keys meanwhile."""

    task: asyncio.Task[_KeySet]
    deadline: float
    """On the verifier's monotonic clock: no request waits for `task` past it."""


@dataclass(frozen=True, slots=True)
class _Failure:
    until: float
    detail: str


class OAuthVerifier:
    def __init__(self, config: AuthConfig, transport: HttpTransport, *, clock: Clock | None = None) -> None:
        if not config.resource:
            raise ConfigError("auth.resource", "is required with auth mode oauth (this server's public URL)")
        if not config.issuers and not config.builtin:
            raise ConfigError(
                "auth.issuers", "name at least one issuer (or builtin: true) with auth mode oauth"
            )
        self.resource = config.resource
        self.issuers = {issuer.issuer: issuer for issuer in config.issuers}
        self.refetch_seconds = config.jwks_refetch_seconds
        self._transport = transport
        self.clock = clock or Clock()
        self._keys: dict[str, _KeySet] = {}
        self._flights: dict[str, _Flight] = {}
        self._failures: dict[str, _Failure] = {}
        self._local: dict[str, Callable[[], Awaitable[dict[str | None, jwt.PyJWK]]]] = {}

    def trust_local(
        self, issuer: OAuthIssuerConfig, keys: Callable[[], Awaitable[dict[str | None, jwt.PyJWK]]]
    ) -> None:
        """An issuer in this process (the built-in authorization server): its keys come from `keys`,
        not over HTTP; everything else is checked as for any issuer."""
        self.issuers[issuer.issuer] = issuer
        self._local[issuer.issuer] = keys

    async def verify(self, token: str) -> Principal:
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise OAuthTokenError("the access token is not a well-formed JWT") from None
        issuer = self.issuers.get(str(unverified.get("iss", "")))
        if issuer is None:
            raise OAuthTokenError("the access token's issuer (iss) is not trusted here")
        alg = header.get("alg")
        if alg not in issuer.algorithms:  # `none` and HS256 are never in the list
            raise OAuthTokenError("the access token's signing algorithm (alg) is not accepted")
        key = await self._key(issuer, header.get("kid"))
        if key.algorithm_name != alg:
            raise OAuthTokenError("the access token's alg does not match its key")
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.resource,
                issuer=issuer.issuer,
                leeway=issuer.leeway_seconds,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            raise OAuthTokenError(_reason(exc)) from None
        return _principal(issuer, claims)

    async def _key(self, issuer: OAuthIssuerConfig, kid: object) -> jwt.PyJWK:
        kid = kid if isinstance(kid, str) else None
        keys = self._keys.get(issuer.issuer)
        stale = keys is None or self.clock.monotonic() - keys.fetched_at >= self.refetch_seconds
        if keys is None or (kid not in keys.keys and stale):
            keys = await self._shared_fetch(issuer, keys)
        key = keys.keys.get(kid)
        if key is None and kid is None and len(keys.keys) == 1:
            key = next(iter(keys.keys.values()))
        if key is None:
            raise OAuthTokenError("the access token's signing key (kid) is not among the issuer's keys")
        return key

    async def _shared_fetch(self, issuer: OAuthIssuerConfig, cached: _KeySet | None) -> _KeySet:
        """The issuer's keys from the one fetch under way (started here if none is), waited for at
        most until that fetch's deadline; within `JWKS_RETRY_SECONDS` of a failure, no fetch."""
        name = issuer.issuer
        failure = self._failures.get(name)
        if failure is not None and self.clock.monotonic() < failure.until:
            return _known_or_unavailable(cached, failure.detail)
        flight = self._flights.get(name)
        if flight is None:
            task = asyncio.get_running_loop().create_task(self._fetch(issuer, cached), name=f"jwks {name}")
            flight = self._flights[name] = _Flight(task, self.clock.monotonic() + JWKS_DEADLINE_SECONDS)
            task.add_done_callback(lambda _: self._land(name, flight))
        # the deadline on the injected clock, the fetch itself also bounded by the transport's timeout
        timer = asyncio.ensure_future(self.clock.sleep(max(0.0, flight.deadline - self.clock.monotonic())))
        try:
            await asyncio.wait((flight.task, timer), return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
        if flight.task.done() and not flight.task.cancelled():
            return flight.task.result()  # the keys, or the fetch's OAuthTokenError
        detail = f"no answer within {JWKS_DEADLINE_SECONDS:g} s"
        if self._flights.get(name) is flight:  # the first request past the deadline ends the fetch
            self._failures[name] = _Failure(self.clock.monotonic() + JWKS_RETRY_SECONDS, detail)
            flight.task.cancel()
        return _known_or_unavailable(cached, detail)

    def _land(self, name: str, flight: _Flight) -> None:
        if self._flights.get(name) is flight:
            del self._flights[name]
        if not flight.task.cancelled():
            flight.task.exception()  # retrieved: a refusal that no request is waiting for any more

    async def _fetch(self, issuer: OAuthIssuerConfig, cached: _KeySet | None) -> _KeySet:
        local = self._local.get(issuer.issuer)
        if local is not None:
            keys = _KeySet(await local(), self.clock.monotonic())
            self._keys[issuer.issuer] = keys
            return keys
        spec = RequestSpec("GET", issuer.jwks_uri, headers={"Accept": "application/json"}, step="jwks")
        detail = None
        try:
            raw = await self._transport.send(spec, timeout=JWKS_DEADLINE_SECONDS, max_bytes=JWKS_MAX_BYTES)
            if raw.status == 200:
                found = {key.key_id: key for key in jwt.PyJWKSet.from_dict(json.loads(raw.body)).keys}
            else:
                detail = f"HTTP {raw.status}"
        except ZarniwoopError as exc:  # the transport's one error shape: where and why, no body
            detail = exc.message
        except (ValueError, jwt.PyJWTError) as exc:
            detail = f"not a JWKS ({type(exc).__name__})"
        if detail is not None:
            self._failures[issuer.issuer] = _Failure(self.clock.monotonic() + JWKS_RETRY_SECONDS, detail)
            if cached is not None:  # keep what we had: a token for a known key still works
                cached.fetched_at = self.clock.monotonic()
            return _known_or_unavailable(cached, detail)
        self._failures.pop(issuer.issuer, None)
        keys = _KeySet(found, self.clock.monotonic())
        self._keys[issuer.issuer] = keys
        return keys


def _known_or_unavailable(cached: _KeySet | None, detail: str) -> _KeySet:
    """The keys held before (a token for a known key still works), else a 503 naming why."""
    if cached is not None:
        return cached
    raise OAuthTokenError(
        f"the issuer's keys (jwksUri) cannot be read right now: {detail}",
        error="temporarily_unavailable",
        status=503,
    )


def _reason(exc: jwt.PyJWTError) -> str:
    if isinstance(exc, jwt.ExpiredSignatureError):
        return "the access token has expired (exp)"
    if isinstance(exc, jwt.ImmatureSignatureError):
        return "the access token is not valid yet (nbf)"
    if isinstance(exc, jwt.InvalidAudienceError):
        return "the access token is for another resource (aud)"
    if isinstance(exc, jwt.InvalidIssuerError):
        return "the access token's issuer (iss) is not trusted here"
    if isinstance(exc, jwt.InvalidSignatureError):
        return "the access token's signature does not verify"
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"the access token has no {exc.claim} claim"
    return "the access token is not valid"


def _principal(issuer: OAuthIssuerConfig, claims: Mapping[str, Any]) -> Principal:
    mapping = issuer.claims
    tenant = issuer.tenant or _claim_name(claims, mapping.tenant, "tenant")
    if tenant is None:
        raise OAuthTokenError(f"the access token has no {mapping.tenant} claim (the tenant)")
    project = _claim_name(claims, mapping.project, "project") or issuer.project or "default"
    granted = claims.get(mapping.role)
    scopes = granted.split() if isinstance(granted, str) else granted if isinstance(granted, list) else []
    held = [scope for scope in ROLE_SCOPES if scope in scopes]
    if not held:
        raise OAuthTokenError(
            f"the access token grants none of the scopes {', '.join(ROLE_SCOPES)}",
            error="insufficient_scope",
            status=403,
        )
    role = held[-1].removeprefix("zarniwoop:")
    account = _claim_name(claims, mapping.account, "account") if mapping.account else None
    subject = f"{issuer.issuer} {claims.get('sub', '')}".encode()
    token_id = "oauth_" + hashlib.sha256(subject).hexdigest()[:16]  # audit: who, never the token
    return Principal(tenant, ANY if role == "tenant-admin" else project, role, token_id, account)


def _claim_name(claims: Mapping[str, Any], claim: str, kind: str) -> str | None:
    """The claim's value if it is a valid `kind` name, None if the token has no such claim."""
    value = claims.get(claim)
    if value is None:
        return None
    try:
        return check_name(kind, value)
    except InvalidRequestError:
        raise OAuthTokenError(f"the access token's {claim} claim is not a valid {kind} name") from None


__all__ = ["ROLE_SCOPES", "OAuthTokenError", "OAuthVerifier", "looks_like_jwt"]

"""What unauthenticated callers leave in the built-in authorization server's tables does not stay
(issue 45): the one retention job deletes expired `/authorize` requests, codes and refresh tokens
and the clients that never got a token a day after they registered — on SQLite and PostgreSQL.
And the consent step never sends a browser to a redirect URI the client did not register, nor to
a kind no client may register (a `javascript:` URI stored before registration was bounded).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from mcp.server.auth.provider import AuthorizationParams, AuthorizeError, RegistrationError
from mcp.shared.auth import OAuthClientInformationFull

from zarniwoop.contract.errors import ConfigError, InvalidRequestError
from zarniwoop.runtime import retention_rules
from zarniwoop.storage.retention import prune
from zarniwoop.surfaces.http.oauth_server import PENDING_PER_CLIENT, BuiltinAuthServer

from ..support.clock import TestClock
from ..support.runtime import open_runtime

pytestmark = pytest.mark.anyio
REDIRECT = "http://127.0.0.1:9/callback"
ISSUER = "http://127.0.0.1:1"


def client(client_id: str, *uris: str) -> OAuthClientInformationFull:
    return OAuthClientInformationFull(
        client_id=client_id, redirect_uris=list(uris or [REDIRECT]), token_endpoint_auth_method="none"
    )


def params(redirect: str = REDIRECT) -> AuthorizationParams:
    return AuthorizationParams(
        state="s",
        scopes=None,
        code_challenge="x" * 43,
        redirect_uri=redirect,
        redirect_uri_provided_explicitly=True,
    )


async def count(rt, table: str) -> int:
    return int((await rt.db.fetchone(f"SELECT COUNT(*) FROM {table}"))[0])


async def test_retention_purges_expired_requests_and_unused_clients(tmp_path, database_url):
    clock = TestClock()
    config = {"database_url": database_url} if database_url else {}
    async with await open_runtime(tmp_path, {}, **config) as rt:
        server = BuiltinAuthServer(rt.db, rt.box, issuer=ISSUER, resource=ISSUER, clock=clock)
        for client_id in ("unused-1", "unused-2", "used"):
            await server.register_client(client(client_id))
        for client_id in ("unused-1", "unused-2"):  # an unauthenticated caller's `/authorize` requests
            for _ in range(PENDING_PER_CLIENT):
                await server.authorize(client(client_id), params())
            with pytest.raises(AuthorizeError) as full:  # never answered: each client's are capped
                await server.authorize(client(client_id), params())
            assert full.value.error == "temporarily_unavailable"
        parked = 2 * PENDING_PER_CLIENT
        issued = await rt.tokens.create("acme", "*", "tenant-admin")
        admin = await rt.tokens.verify(issued.token)
        consent = await server.authorize(client("used"), params())
        request_id = parse_qs(urlparse(consent).query)["request"][0]
        redirect = await server.decide(
            request_id, admin, approve=True, tenant="acme", project="p", role="user"
        )
        code = await server.load_authorization_code(
            client("used"), parse_qs(urlparse(redirect).query)["code"][0]
        )
        await server.exchange_authorization_code(client("used"), code)
        assert (await count(rt, "oauth_requests"), await count(rt, "oauth_clients")) == (parked, 3)

        nothing = await prune(rt.db, retention_rules(rt.settings), now=clock.now())
        assert (nothing["oauth_requests"], nothing["oauth_clients"]) == (0, 0)  # not expired yet, all new

        clock.advance(86400 + 1)  # a day on: the requests expired, the unused clients are a day old
        removed = await prune(rt.db, retention_rules(rt.settings), now=clock.now())
        assert (removed["oauth_requests"], removed["oauth_clients"], removed["oauth_refresh_tokens"]) == (
            parked,
            2,
            0,
        )
        assert [str(row[0]) for row in await rt.db.fetchall("SELECT client_id FROM oauth_clients")] == [
            "used"
        ]
        assert await count(rt, "oauth_refresh_tokens") == 1  # the used client's grant lives on (30 days)

        clock.advance(30 * 86400)
        assert (await prune(rt.db, retention_rules(rt.settings), now=clock.now()))[
            "oauth_refresh_tokens"
        ] == 1


async def test_consent_never_sends_the_browser_to_an_unregistered_or_unsafe_uri(tmp_path):
    async with await open_runtime(tmp_path, {}) as rt:
        server = BuiltinAuthServer(rt.db, rt.box, issuer=ISSUER, resource=ISSUER)
        with pytest.raises(RegistrationError) as refused:
            await server.register_client(client("js", "javascript:alert(1)"))
        assert refused.value.error == "invalid_redirect_uri"
        assert refused.value.error_description.startswith("redirect_uris: ")

        # stored before registration was bounded: the consent refuses to send anyone there
        legacy = client("legacy", "javascript:alert(1)")
        sealed = rt.box.seal(legacy.model_dump_json(), aad=b"legacy")
        await rt.db.execute(
            "INSERT INTO oauth_clients (client_id, info, created_at) VALUES (?, ?, ?)",
            ("legacy", sealed, 0.0),
        )
        issued = await rt.tokens.create("acme", "*", "tenant-admin")
        admin = await rt.tokens.verify(issued.token)
        for registered, asked in (
            (legacy, "javascript:alert(1)"),
            (client("ok"), "https://elsewhere.example/cb"),
        ):
            if registered.client_id == "ok":
                await server.register_client(registered)
            consent = await server.authorize(registered, params(asked))
            request_id = parse_qs(urlparse(consent).query)["request"][0]
            with pytest.raises(InvalidRequestError) as unsafe:
                await server.decide(request_id, admin, approve=True, tenant="acme", project="p", role="user")
            assert unsafe.value.field == "redirect_uri"


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        (
            "auth.registration.perAddressPerHour",
            0,
            "must be between 1 and 100000 registrations an hour, got 0",
        ),
        ("auth.registration.maxUnusedClients", 0, "must be between 1 and 10000000 clients, got 0"),
        ("auth.registration.maxUnusedClients", "many", "expected an integer, got 'many'"),
    ],
)
async def test_a_bad_registration_bound_fails_start_up_naming_the_key(tmp_path, key, value, reason):
    with pytest.raises((InvalidRequestError, ConfigError)) as caught:
        await open_runtime(tmp_path, {key: value})
    named = getattr(caught.value, "key", None) or getattr(caught.value, "field", None)
    assert (named, caught.value.reason) == (key, reason)

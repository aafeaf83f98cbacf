"""The built-in authorization server (`auth.builtin: true`) driven by the mcp SDK's own OAuth client.

A real `zarniwoop serve --auth oauth` on loopback; `OAuthClientProvider` finds the metadata from the
401 (RFC 9728 → RFC 8414), registers itself (RFC 7591), runs authorization code + PKCE (S256); the
test plays the browser: it follows `/authorize` to the consent page and approves the request over
HTTP as a signed-in tenant admin (`POST /v1/oauth/requests/{id}`). Then the client lists and calls
the five tools in the granted tenant and project. Also: a refresh token used twice (the second is
refused), an expired access token (401 with the challenge), a user grant kept off tenant-admin
routes, a grant wider than the admin's own refused, the consent page served.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import socket
import ssl
import time
from urllib.parse import parse_qs, urlparse

import httpx
import httpx2  # the mcp SDK's HTTP client: its OAuthClientProvider is an httpx2 auth flow
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from ..support.cli import run_cli
from ..support.runtime import write_config
from ..support.served import served
from ..support.tool_calls import REQUIRED_ONLY, mount_recorded

pytestmark = pytest.mark.anyio
REDIRECT = "http://127.0.0.1:9/callback"
ACCESS_SECONDS = 10
"""The access tokens' lifetime: the sign-in test's checks of a valid token must all land before it
ends (with 2 s, a loaded machine took longer and the token had expired: a 401, issue 24); the wait
for the expiry is then taken from the token's own `exp`, not from this constant."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.fixture
def server(tmp_path, emulator):
    port = free_port()
    config = write_config(
        tmp_path,
        {
            "settings": mount_recorded(emulator),
            "auth": {
                "mode": "oauth",
                "resource": f"http://127.0.0.1:{port}",
                "builtin": True,
                "accessTokenSeconds": ACCESS_SECONDS,
            },
            "tenants": {"acme": {"projects": {"review": {}, "other": {}}}},
        },
    )
    home = tmp_path / "home"
    created = run_cli(
        *(
            "--config",
            str(config),
            "--tenant",
            "acme",
            "tokens",
            "create",
            "--role",
            "tenant-admin",
            "--json",
        ),
        home=home,
    )
    assert created.code == 0, created.stderr
    admin_token = json.loads(created.stdout)["token"]
    with served(config, home, "--port", str(port), "--auth", "oauth") as running:
        assert running.url == f"http://127.0.0.1:{port}"
        running.token = admin_token
        yield running


class Browser:
    """What the user's browser and the admin do between `/authorize` and the client's redirect."""

    def __init__(self, base: str, admin_token: str, grant: dict) -> None:
        self.base, self.admin_token, self.grant = base, admin_token, grant
        self.code: tuple[str, str | None] | None = None
        self.consent_page = ""
        self.verify: ssl.SSLContext | bool = True
        """The TLS trust of the browser (a proxy's self-signed certificate in test_reverse_proxy)."""

    async def redirect(self, authorization_url: str) -> None:
        async with httpx.AsyncClient(timeout=30, verify=self.verify) as http:
            sent = await http.get(authorization_url)  # `/authorize` → 302 to the consent page
            assert sent.status_code == 302, sent.text
            consent = sent.headers["location"]
            assert consent.startswith(f"{self.base}/oauth/consent?request=req_")
            self.consent_page = (await http.get(consent)).text
            request_id = parse_qs(urlparse(consent).query)["request"][0]
            headers = {"Authorization": f"Bearer {self.admin_token}"}
            shown = await http.get(f"{self.base}/v1/oauth/requests/{request_id}", headers=headers)
            assert shown.json()["redirectUri"] == REDIRECT and shown.json()["tenant"] == "acme"
            approved = await http.post(
                f"{self.base}/v1/oauth/requests/{request_id}", json=self.grant, headers=headers
            )
            assert approved.status_code == 200, approved.text
        back = parse_qs(urlparse(approved.json()["redirect"]).query)
        self.code = (back["code"][0], back.get("state", [None])[0])

    async def callback(self) -> AuthorizationCodeResult:
        assert self.code is not None
        return AuthorizationCodeResult(code=self.code[0], state=self.code[1])


def sdk_client(server, browser: Browser, storage: MemoryStorage) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=f"{server.url}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="test agent",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.redirect,
        callback_handler=browser.callback,
    )


async def test_sdk_client_signs_in_through_consent_and_calls_the_five_tools(server):
    browser = Browser(server.url, server.token, {"project": "review", "role": "user"})
    storage = MemoryStorage()
    async with (
        httpx2.AsyncClient(auth=sdk_client(server, browser, storage), timeout=30) as http,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
    ):
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == set(REQUIRED_ONLY)
        for name, arguments in REQUIRED_ONLY.items():
            result = await client.call_tool(name, arguments)
            assert not result.is_error, (name, result.content[0].text)
        search = await client.call_tool("research_search", REQUIRED_ONLY["research_search"])
        assert search.structured_content["providerInstanceId"] == "brave"
    assert "Grant access to Zarniwoop" in browser.consent_page
    tokens = storage.tokens
    assert tokens is not None and tokens.refresh_token is not None and tokens.scope == "zarniwoop:user"
    claims = _claims(tokens.access_token)
    assert (claims["aud"], claims["zarniwoop_tenant"], claims["zarniwoop_project"]) == (
        f"{server.url}",
        "acme",
        "review",
    )
    assert claims["exp"] - claims["iat"] == ACCESS_SECONDS

    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        bearer = {"Authorization": f"Bearer {tokens.access_token}"}
        search = {"query": "semantic kernel", "modality": "web"}
        assert (await http.post("/v1/research/search", json=search, headers=bearer)).status_code == 200
        assert (await http.get("/v1/credentials", headers=bearer)).status_code == 403  # a user grant
        other = await http.post("/v1/research/search?project=other", json=search, headers=bearer)
        assert other.status_code == 403  # only the granted project

        refresh = {
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "client_id": storage.client.client_id,
        }
        first = await http.post("/token", data=refresh)
        assert first.status_code == 200, first.text
        assert first.json()["refresh_token"] != tokens.refresh_token  # rotated
        again = await http.post("/token", data=refresh)
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"  # used twice: refused
        rotated = {**refresh, "refresh_token": first.json()["refresh_token"]}
        assert (await http.post("/token", data=rotated)).json()["error"] == "invalid_grant"  # family revoked

        # let the access token expire (no leeway for our own): a second past its `exp`
        await asyncio.sleep(max(0.0, claims["exp"] + 1 - time.time()))
        expired = await http.post("/v1/research/search", json=search, headers=bearer)
        assert expired.status_code == 401
        assert expired.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{server.url}/.well-known/oauth-protected-resource", '
            'error="invalid_token", error_description="the access token has expired (exp)"'
        )


async def test_metadata_pkce_and_grants_beyond_the_admin_are_refused(server):
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        metadata = (await http.get("/.well-known/oauth-authorization-server")).json()
        assert metadata["issuer"].rstrip("/") == server.url
        assert metadata["code_challenge_methods_supported"] == ["S256"]
        assert metadata["registration_endpoint"] == f"{server.url}/register"
        registered = await http.post(
            "/register",
            json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "client_name": "x"},
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        verifier = "v" * 64
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "s1",
        }
        plain = await http.get("/authorize", params={**query, "code_challenge_method": "plain"})
        assert plain.status_code == 302 and "error=invalid_request" in plain.headers["location"]  # S256 only
        elsewhere = await http.get("/authorize", params={**query, "resource": "https://other.test"})
        assert "error=invalid_target" in elsewhere.headers["location"]  # tokens only for this resource
        sent = await http.get("/authorize", params=query)
        request_id = parse_qs(urlparse(sent.headers["location"]).query)["request"][0]
        admin = {"Authorization": f"Bearer {server.token}"}
        wider = await http.post(
            f"/v1/oauth/requests/{request_id}",
            json={"tenant": "globex", "project": "x", "role": "user"},
            headers=admin,
        )
        assert wider.status_code == 403  # another tenant than the admin's
        every = await http.post(
            f"/v1/oauth/requests/{request_id}", json={"project": "*", "role": "user"}, headers=admin
        )
        assert every.status_code == 422 and every.json()["error"]["field"] == "project"
        granted = await http.post(
            f"/v1/oauth/requests/{request_id}", json={"project": "review", "role": "admin"}, headers=admin
        )
        code = parse_qs(urlparse(granted.json()["redirect"]).query)["code"][0]
        token_request = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": client_id,
            "code_verifier": "w" * 64,
        }
        assert (await http.post("/token", data=token_request)).json()[
            "error"
        ] == "invalid_grant"  # wrong verifier
        issued = await http.post("/token", data={**token_request, "code_verifier": verifier})
        assert issued.status_code == 200, issued.text
        assert issued.json()["scope"] == "zarniwoop:admin"
        assert (
            await http.post("/token", data={**token_request, "code_verifier": verifier})
        ).status_code == 400  # once


def _claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


async def test_codes_and_refresh_tokens_on_each_database_shared_by_two_workers(tmp_path, database_url):
    """Two `BuiltinAuthServer`s on one database (two workers): the same signing key, one-time codes,
    refresh tokens rotated once — on SQLite and on PostgreSQL."""
    from mcp.server.auth.provider import AuthorizationParams, TokenError

    from zarniwoop.surfaces.http.oauth_server import BuiltinAuthServer

    from ..support.runtime import open_runtime

    config = {"database_url": database_url} if database_url else {}
    async with await open_runtime(tmp_path, {}, **config) as rt:
        one, two = (
            BuiltinAuthServer(rt.db, rt.box, issuer="http://127.0.0.1:1", resource="http://127.0.0.1:1")
            for _ in range(2)
        )
        assert (await one.keys()).keys() == (await two.keys()).keys()
        client = OAuthClientInformationFull(
            client_id="c1", redirect_uris=[REDIRECT], token_endpoint_auth_method="none"
        )
        await one.register_client(client)
        assert (await two.get_client("c1")).redirect_uris == client.redirect_uris
        params = AuthorizationParams(
            state="s",
            scopes=None,
            code_challenge="x" * 43,
            redirect_uri=REDIRECT,
            redirect_uri_provided_explicitly=True,
        )
        request_id = parse_qs(urlparse(await one.authorize(client, params)).query)["request"][0]
        issued_admin = await rt.tokens.create("acme", "*", "tenant-admin")
        admin = await rt.tokens.verify(issued_admin.token)  # a grant lives as long as its approver
        assert admin is not None
        redirect = await two.decide(
            request_id, admin, approve=True, tenant="acme", project="review", role="user"
        )
        code = parse_qs(urlparse(redirect).query)["code"][0]
        loaded = await one.load_authorization_code(client, code)
        assert loaded is not None
        assert {k: loaded.grant[k] for k in ("tenant", "project", "role", "approver")} == {
            "tenant": "acme",
            "project": "review",
            "role": "user",
            "approver": issued_admin.id,
        }
        issued = await two.exchange_authorization_code(client, loaded)
        stored = [str(row[0]) for row in await rt.db.fetchall("SELECT token_hash FROM oauth_refresh_tokens")]
        assert stored == [hashlib.sha256(issued.refresh_token.encode()).hexdigest()]  # only its SHA-256
        with pytest.raises(TokenError):
            await one.exchange_authorization_code(client, loaded)  # a code is good once
        refresh = await one.load_refresh_token(client, issued.refresh_token)
        assert refresh is not None
        rotated = await two.exchange_refresh_token(client, refresh, refresh.scopes)
        with pytest.raises(TokenError):
            await one.exchange_refresh_token(client, refresh, refresh.scopes)
        assert await one.load_refresh_token(client, issued.refresh_token) is None  # replayed: family ends
        assert await two.load_refresh_token(client, rotated.refresh_token) is None

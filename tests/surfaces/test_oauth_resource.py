"""`serve --auth oauth` as an OAuth 2.1 resource server for an external issuer (issue 26).

A real `zarniwoop serve` (uvicorn on loopback) trusts a test issuer whose JWKS the loopback emulator
serves (`tests/support/oauth.py`; tokens signed here with PyJWT over cryptography):

- protected-resource metadata (RFC 9728) at `/.well-known/oauth-protected-resource`, and a 401 whose
  `WWW-Authenticate` names it; static API tokens keep working beside OAuth;
- a valid token makes scoped calls over `/v1` and `/mcp` (the mcp SDK's client), in the tenant and
  project its claims name, with the role its scope grants;
- wrong `iss`, wrong `aud`, expired, `alg: none`, a tampered signature, a `kid` unknown after a
  rotation (the JWKS refetched once, then refused) → each a 401 naming the failed check and no
  secret; no role scope → 403 `insufficient_scope`;
- the refetch for an unknown `kid` is throttled (`auth.jwksRefetchSeconds`, on an injected clock).
"""

from __future__ import annotations

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from zarniwoop.config.file import AuthConfig
from zarniwoop.contract.errors import OAuthTokenError
from zarniwoop.tenancy.oauth import OAuthVerifier
from zarniwoop.transport.http import HttpTransport

from ..support.cli import never_serve, run_cli
from ..support.clock import ManualClock
from ..support.oauth import ISSUER, RESOURCE, TestIssuer
from ..support.runtime import write_config
from ..support.served import served
from ..support.tool_calls import mount_recorded

pytestmark = pytest.mark.anyio
USER = {"zarniwoop_tenant": "acme", "zarniwoop_project": "review", "scope": "openid zarniwoop:user"}
SEARCH = {"query": "semantic kernel", "modality": "web", "maxResults": 3}
METADATA = f"{RESOURCE}/.well-known/oauth-protected-resource"


@pytest.fixture
def idp(emulator):
    return TestIssuer(emulator)


@pytest.fixture
def server(tmp_path, emulator, idp):
    config = write_config(
        tmp_path,
        {
            "settings": mount_recorded(emulator),
            "auth": idp.config(),
            "tenants": {"acme": {"projects": {"review": {}, "other": {}}}},
        },
    )
    with served(config, tmp_path / "home", "--auth", "oauth") as running:
        yield running


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_metadata_challenge_and_scoped_calls_with_a_valid_token(server, idp):
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
            document = (await http.get(path)).json()
            assert document["resource"] in (RESOURCE, f"{RESOURCE}/")
            assert [a.rstrip("/") for a in document["authorization_servers"]] == [ISSUER]
            assert document["scopes_supported"] == [
                "zarniwoop:user",
                "zarniwoop:admin",
                "zarniwoop:tenant-admin",
            ]
            assert document["bearer_methods_supported"] == ["header"]
        for path in ("/mcp", "/v1/research/providers"):
            refused = await http.post(path, json={}) if path == "/mcp" else await http.get(path)
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"] == f'Bearer resource_metadata="{METADATA}"'

        user = idp.token(**USER)
        found = await http.post("/v1/research/search", json=SEARCH, headers=bearer(user))
        assert found.status_code == 200, found.text
        assert found.json()["providerInstanceId"] == "brave"
        assert (await http.get("/v1/tokens", headers=bearer(user))).status_code == 403  # a user, not an admin
        other = await http.post("/v1/research/search?project=other", json=SEARCH, headers=bearer(user))
        assert other.status_code == 403  # bound to acme/review by its claims
        assert "bound to project 'review'" in other.json()["error"]["message"]
        assert (await http.get("/v1/credentials", headers=bearer(user))).status_code == 403

        tenant_admin = idp.token(zarniwoop_tenant="acme", scope="zarniwoop:tenant-admin", sub="boss")
        assert (await http.get("/v1/credentials", headers=bearer(tenant_admin))).status_code == 200
        elsewhere = await http.post(
            "/v1/research/search?project=other", json=SEARCH, headers=bearer(tenant_admin)
        )
        assert elsewhere.status_code == 200  # every project of its tenant
        assert (
            await http.get("/metrics", headers=bearer(tenant_admin))
        ).status_code == 403  # never the operator

        assert server.token is not None  # the static admin token keeps working beside OAuth
        assert (await http.get("/metrics", headers=bearer(server.token))).status_code == 200

    async with (
        httpx.AsyncClient(headers=bearer(user), timeout=30) as http,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
    ):
        assert len((await client.list_tools()).tools) == 5
        result = await client.call_tool("research_search", SEARCH)
        assert not result.is_error and result.structured_content["providerInstanceId"] == "brave"
        providers = await client.call_tool("research_providers", {})
        assert "lastError" not in providers.structured_content["providers"][0]  # a user's view
    assert user not in "".join(server.output)


async def test_each_bad_token_is_a_401_naming_the_check_and_no_secret(server, idp, tmp_path):
    good = idp.token(**USER)
    cases = {
        "wrong iss": (
            idp.token(**{**USER, "iss": "https://evil.test"}),
            "the access token's issuer (iss) is not trusted here",
        ),
        "wrong aud": (
            idp.token(**{**USER, "aud": "https://other.test"}),
            "the access token is for another resource (aud)",
        ),
        "expired": (
            idp.token(**{**USER, "exp": 1_000_000, "iat": 999_000, "nbf": 999_000}),
            "the access token has expired (exp)",
        ),
        "alg none": (idp.unsigned(**USER), "the access token's signing algorithm (alg) is not accepted"),
        "tampered": (
            idp.tampered(good, **{**USER, "scope": "zarniwoop:tenant-admin"}),
            "the access token's signature does not verify",
        ),
    }
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        assert (await http.post("/v1/research/search", json=SEARCH, headers=bearer(good))).status_code == 200
        for name, (token, reason) in cases.items():
            for path in ("/v1/research/search", "/mcp"):
                answer = await http.post(path, json=SEARCH, headers=bearer(token))
                assert answer.status_code == 401, (name, path, answer.text)
                assert answer.json()["error"]["message"] == reason, name
                challenge = answer.headers["www-authenticate"]
                assert challenge == (
                    f'Bearer resource_metadata="{METADATA}", error="invalid_token", error_description="{reason}"'
                )
                for part in token.split("."):  # no piece of the token comes back
                    assert not part or part not in answer.text + challenge, name

        # rotation: the issuer now publishes k2 only
        fetched = idp.fetches()
        idp.rotate("k2")
        rotated = idp.token(**USER)
        assert (
            await http.post("/v1/research/search", json=SEARCH, headers=bearer(rotated))
        ).status_code == 200
        assert idp.fetches() == fetched + 1  # k2 was unknown: one refetch
        retired = idp.token(kid="k1", **USER)  # signed with the key the issuer no longer publishes
        answer = await http.post("/v1/research/search", json=SEARCH, headers=bearer(retired))
        assert answer.status_code == 401
        assert answer.json()["error"]["message"] == (
            "the access token's signing key (kid) is not among the issuer's keys"
        )
        assert idp.fetches() == fetched + 2  # refetched once, then refused

        no_role = idp.token(**{**USER, "scope": "openid profile"})
        answer = await http.post("/v1/research/search", json=SEARCH, headers=bearer(no_role))
        assert answer.status_code == 403
        assert 'error="insufficient_scope"' in answer.headers["www-authenticate"]
    log = (tmp_path / "home" / "serve.stderr").read_text()
    assert good.split(".")[2] not in log and rotated.split(".")[2] not in log


async def test_an_unknown_kid_refetches_at_most_once_per_interval(idp):
    clock = ManualClock(1000.0)  # the fetch's deadline lapses only when the test says
    config = AuthConfig.model_validate({**idp.config(), "jwksRefetchSeconds": 60})
    transport = HttpTransport()
    verifier = OAuthVerifier(config, transport, clock=clock)
    try:
        assert (await verifier.verify(idp.token(**USER))).tenant == "acme"
        assert idp.fetches() == 1
        idp.keys["k9"] = idp.keys["k1"]
        forged = idp.token(kid="k9", **USER)  # a kid the issuer never published
        for _ in range(3):
            with pytest.raises(OAuthTokenError) as refused:
                await verifier.verify(forged)
            assert refused.value.status == 401
        assert idp.fetches() == 1  # the keys were fetched 0 s ago: no forged kid makes a fetch
        clock.advance(60)
        with pytest.raises(OAuthTokenError):
            await verifier.verify(forged)
        assert idp.fetches() == 2  # the interval passed: one refetch, then refused
        principal = await verifier.verify(idp.token(**USER))
        assert (principal.tenant, principal.project, principal.role, principal.account) == (
            "acme",
            "review",
            "user",
            None,
        )
        assert principal.token_id is not None and principal.token_id.startswith("oauth_")
    finally:
        await transport.aclose()


async def test_an_unreachable_jwks_is_a_503_and_a_bad_config_names_the_key(emulator):
    from zarniwoop.contract.errors import ConfigError

    idp = TestIssuer(emulator)
    config = AuthConfig.model_validate(
        {**idp.config(), "issuers": [{"issuer": ISSUER, "jwksUri": f"{emulator.url}/nowhere.json"}]}
    )
    transport = HttpTransport()
    try:
        with pytest.raises(OAuthTokenError) as refused:
            await OAuthVerifier(config, transport).verify(idp.token(**USER))
        assert (refused.value.status, refused.value.error) == (503, "temporarily_unavailable")
        assert refused.value.message == "the issuer's keys (jwksUri) cannot be read right now: HTTP 404"
        with pytest.raises(ConfigError) as bad:
            OAuthVerifier(AuthConfig.model_validate({"mode": "oauth", "issuers": []}), transport)
        assert bad.value.message == (
            "config error: auth.resource: is required with auth mode oauth (this server's public URL)"
        )
    finally:
        await transport.aclose()


def test_serve_auth_oauth_without_a_resource_is_a_start_up_error(tmp_path, monkeypatch):
    never_serve(monkeypatch)
    config = write_config(tmp_path, {"settings": {}})
    home = tmp_path / "home"
    done = run_cli(
        "--config", str(config), "serve", "--port", "0", "--no-probes", "--auth", "oauth", home=home
    )
    assert done.code == 2
    assert done.stderr.strip() == (
        "error: config error: auth.resource: is required with auth mode oauth (this server's public URL)"
    )
    bad = run_cli("--config", str(config), "serve", "--auth", "ldap", home=home)
    assert bad.code == 2
    assert bad.stderr.strip() == "error: --auth: expected tokens or oauth, got 'ldap'"

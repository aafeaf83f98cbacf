"""The built-in authorization server hardened (issue 45), through a real `zarniwoop serve`:

- `/register` bounded: 300 registrations from one address → refused past the per-address window,
  the database grows by a bounded amount; a 1 MiB body, 11 redirect URIs, a 2,001-character URI
  and `javascript:`/`data:`/`file:`/non-loopback `http:` redirect URIs refused naming
  `redirect_uris`; past `auth.registration.maxUnusedClients` refused;
- a grant ends with the admin token that approved it (revoked, or demoted), tenant admins list and
  revoke grants (HTTP and CLI), another tenant's admin sees none of them;
- the metadata's `issuer` is the tokens' `iss`; a client registered without `scope` may ask for
  any scope the consent can grant.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from ..support.cli import run_cli
from ..support.runtime import write_config
from ..support.served import served
from ..support.tool_calls import mount_recorded
from .test_oauth_builtin import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group(__name__)]
REDIRECT = "http://127.0.0.1:9/callback"
VERIFIER = "v" * 64
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).rstrip(b"=").decode()


def db_bytes(home: Path) -> tuple[int, int]:
    """The SQLite database's file after a checkpoint (its data), and with its write-ahead log before."""
    with_wal = sum(p.stat().st_size for p in (home / "zarniwoop.db", home / "zarniwoop.db-wal") if p.exists())
    with sqlite3.connect(home / "zarniwoop.db") as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return (home / "zarniwoop.db").stat().st_size, with_wal


def cli(config: Path, home: Path, *args: str) -> str:
    ran = run_cli("--config", str(config), *args, home=home)
    assert ran.code == 0, ran.stderr
    return ran.stdout


@pytest.fixture
def builtin(tmp_path, emulator):
    def start(settings: dict | None = None):
        port = free_port()
        config = write_config(
            tmp_path,
            {
                "settings": {**mount_recorded(emulator), **(settings or {})},
                "auth": {"mode": "oauth", "resource": f"http://127.0.0.1:{port}", "builtin": True},
                "tenants": {"acme": {"projects": {"review": {}}}, "globex": {"projects": {"default": {}}}},
            },
        )
        home = tmp_path / "home"
        admin = json.loads(
            cli(config, home, "--tenant", "acme", "tokens", "create", "--role", "tenant-admin", "--json")
        )
        other = json.loads(
            cli(config, home, "--tenant", "globex", "tokens", "create", "--role", "tenant-admin", "--json")
        )
        return config, home, port, admin, other

    return start


async def sign_in(http: httpx.AsyncClient, admin_token: str, grant: dict, scope: str | None = None) -> dict:
    """Register (no `scope`), authorize, consent as `admin_token`, exchange the code: the token answer."""
    registered = await http.post(
        "/register",
        json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "client_name": "t"},
    )
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": CHALLENGE,
        "code_challenge_method": "S256",
        "state": "s",
        **({"scope": scope} if scope else {}),
    }
    sent = await http.get("/authorize", params=query)
    assert sent.status_code == 302 and "/oauth/consent?request=" in sent.headers["location"], sent.headers
    request_id = parse_qs(urlparse(sent.headers["location"]).query)["request"][0]
    approved = await http.post(
        f"/v1/oauth/requests/{request_id}", json=grant, headers={"Authorization": f"Bearer {admin_token}"}
    )
    assert approved.status_code == 200, approved.text
    code = parse_qs(urlparse(approved.json()["redirect"]).query)["code"][0]
    exchange = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": client_id,
        "code_verifier": VERIFIER,
    }
    issued = await http.post("/token", data=exchange)
    assert issued.status_code == 200, issued.text
    return {**issued.json(), "client_id": client_id}


async def refresh(http: httpx.AsyncClient, tokens: dict) -> httpx.Response:
    answer = await http.post(
        "/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": tokens["client_id"],
        },
    )
    if answer.status_code == 200:
        tokens["refresh_token"] = answer.json()["refresh_token"]
    return answer


def claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


async def test_registration_is_bounded_per_address_in_size_and_in_redirect_uris(builtin, capsys):
    config, home, port, _, _ = builtin()
    with served(config, home, "--port", str(port), "--auth", "oauth") as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:

            def client(uris: list[str]) -> dict:
                return {"redirect_uris": uris, "token_endpoint_auth_method": "none"}

            before = db_bytes(home)
            huge = await http.post(
                "/register",
                json=client([f"https://app.example/cb/{i:04d}" + "x" * 1000 for i in range(1000)]),
            )
            assert huge.status_code == 413 and "16384 bytes" in huge.json()["error_description"]
            refused = {
                "eleven": client([f"https://app.example/{i}" for i in range(11)]),
                "long": client(["https://app.example/" + "a" * 2000]),
                "javascript": client(["javascript:alert(document.domain)"]),
                "data": client(["data:text/html,<script>alert(1)</script>"]),
                "file": client(["file:///etc/passwd"]),
                "http elsewhere": client(["http://evil.example/cb"]),
                "app scheme": client(["com.example.app:/oauth2redirect"]),
            }
            for name, body in refused.items():
                answer = await http.post("/register", json=body)
                assert answer.status_code == 400, (name, answer.text)
                assert answer.json()["error"] == "invalid_redirect_uri", name
                assert answer.json()["error_description"].startswith("redirect_uris: "), name
            accepted = [
                client(["https://claude.example/api/mcp/auth_callback"]),
                client(["http://127.0.0.1:33418/callback", "http://[::1]:8080/cb", "http://localhost/cb"]),
            ]
            statuses = []
            for i in range(300 - 1 - len(refused)):
                answer = await http.post("/register", json=accepted[i % len(accepted)])
                statuses.append(answer.status_code)
                if answer.status_code == 429:
                    last = answer
            after = db_bytes(home)
    # 30 an hour from one address: 8 refused for their content, then 22 registered, then 429s
    assert statuses.count(201) == 30 - 1 - len(refused)
    assert statuses == [201] * statuses.count(201) + [429] * (len(statuses) - statuses.count(201))
    assert last.headers["retry-after"].isdigit() and 0 < int(last.headers["retry-after"]) <= 3600
    assert last.json()["error_description"].startswith("at most 30 client registrations per address per hour")
    growth = after[0] - before[0]
    with capsys.disabled():
        print(
            f"\n[issue 45] 300 registrations from one address: database file {before[0]:,} -> {after[0]:,} bytes"
            f" (+{growth:,}; with its write-ahead log {before[1]:,} -> {after[1]:,})"
        )
    assert growth < 256 * 1024  # 22 small clients and their window rows, not 25 MB


async def test_unused_clients_and_waiting_sign_ins_are_capped(builtin):
    config, home, port, _, _ = builtin({"auth.registration.maxUnusedClients": 3})
    with served(config, home, "--port", str(port), "--auth", "oauth") as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
            body = {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
            answers = [await http.post("/register", json=body) for _ in range(4)]
            query = {
                "response_type": "code",
                "client_id": answers[0].json()["client_id"],
                "redirect_uri": REDIRECT,
                "code_challenge": CHALLENGE,
                "code_challenge_method": "S256",
            }
            parked = [(await http.get("/authorize", params=query)).headers["location"] for _ in range(21)]
    assert [a.status_code for a in answers] == [201, 201, 201, 429]
    assert "3 registered clients have not signed in yet" in answers[3].json()["error_description"]
    assert all("/oauth/consent?request=" in where for where in parked[:20])  # 20 wait for consent
    assert parked[20].startswith(REDIRECT) and "error=temporarily_unavailable" in parked[20]


async def test_a_grant_ends_with_its_approver_and_tenant_admins_list_and_revoke_grants(builtin):
    config, home, port, admin, other = builtin()
    with served(config, home, "--port", str(port), "--auth", "oauth") as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
            metadata = (await http.get("/.well-known/oauth-authorization-server")).json()
            # a client registered without `scope` asks for the widest the consent can grant
            first = await sign_in(
                http,
                admin["token"],
                {"project": "review", "role": "user"},
                scope="zarniwoop:admin zarniwoop:tenant-admin",
            )
            assert metadata["issuer"] == claims(first["access_token"])["iss"] == server.url  # RFC 8414 §3.3
            resource = (await http.get("/.well-known/oauth-protected-resource")).json()
            assert resource["authorization_servers"] == [metadata["issuer"]]
            assert (await refresh(http, first)).status_code == 200

            # a second approver, demoted later; a third grant revoked by a tenant admin
            approver = json.loads(
                cli(
                    config,
                    home,
                    "--tenant",
                    "acme",
                    "--project",
                    "review",
                    "tokens",
                    "create",
                    "--role",
                    "admin",
                    "--json",
                )
            )
            second = await sign_in(http, approver["token"], {"project": "review", "role": "admin"})
            third = await sign_in(http, admin["token"], {"project": "review", "role": "user"})

            as_admin = {"Authorization": f"Bearer {admin['token']}"}
            listed = (await http.get("/v1/oauth/grants", headers=as_admin)).json()["grants"]
            assert [(g["clientId"], g["role"], g["approver"]) for g in listed] == [
                (first["client_id"], "user", admin["id"]),
                (second["client_id"], "admin", approver["id"]),
                (third["client_id"], "user", admin["id"]),
            ]
            as_other = {"Authorization": f"Bearer {other['token']}"}
            assert (await http.get("/v1/oauth/grants", headers=as_other)).json()["grants"] == []
            third_id = listed[2]["id"]
            assert (await http.delete(f"/v1/oauth/grants/{third_id}", headers=as_other)).status_code == 404
            as_user = {"Authorization": f"Bearer {first['access_token']}"}
            assert (await http.get("/v1/oauth/grants", headers=as_user)).status_code == 403

            revoked = await http.delete(f"/v1/oauth/grants/{third_id}", headers=as_admin)
            assert revoked.status_code == 200 and revoked.json() == {"id": third_id, "revoked": True}
            assert (await refresh(http, third)).json()["error"] == "invalid_grant"

            # demoted: the project admin becomes a user (no API demotes a token; the row is edited)
            with sqlite3.connect(home / "zarniwoop.db") as db:
                db.execute("UPDATE tokens SET role = 'user' WHERE id = ?", (approver["id"],))
            assert (await refresh(http, second)).json()["error"] == "invalid_grant"

            # deleted: the tenant admin's token revoked → every grant it approved ends
            listing = json.loads(cli(config, home, "--tenant", "acme", "oauth", "grants", "--json"))["grants"]
            assert [g["clientId"] for g in listing] == [first["client_id"]]
            cli(config, home, "tokens", "revoke", admin["id"])
            ended = await refresh(http, first)
            assert ended.status_code == 400 and ended.json()["error"] == "invalid_grant"
            assert (
                json.loads(cli(config, home, "--tenant", "acme", "oauth", "grants", "--json"))["grants"] == []
            )

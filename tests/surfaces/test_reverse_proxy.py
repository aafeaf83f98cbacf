"""The README's remote quick start, run: its nginx block (Debian's nginx, on loopback with a
self-signed certificate) in front of `zarniwoop serve --host 127.0.0.1 --auth oauth` — nginx sends
`Host: 127.0.0.1` (`$host`, no port), which `/mcp` must answer (issue 45: it was a 421) — and the
mcp SDK's client connecting through it over TLS:

- with an access token of a loopback test issuer (`tests/support/oauth.py`): the 401 challenge
  names the public https URL, the five tools list, and `research_investigate`'s progress arrives
  through the proxy as it streams (`proxy_buffering off`);
- with the README's `builtin: true`: the client discovers, registers, signs in through the consent
  (approved over HTTPS as a tenant admin) and calls the five tools.

Skips, naming what is missing, without nginx.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import ssl
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest
import yaml
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client

from ..support.cli import run_cli
from ..support.oauth import ISSUER, TestIssuer
from ..support.runtime import write_config
from ..support.served import Served, served
from ..support.tls import self_signed
from ..support.tool_calls import CALLS, REQUIRED_ONLY, mount_recorded
from ..support.waiting import until

pytestmark = pytest.mark.anyio
README = Path(__file__).resolve().parents[2] / "README.md"
NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)


def readme_block(language: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, f"README.md has no {language} block"
    return blocks[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def nginx_config(tmp_path: Path, listen: int, upstream: int) -> Path:
    """The README's server block, with only the machine-specific values put in (the test fails if
    the block no longer has them)."""
    cert, key = self_signed(tmp_path, "127.0.0.1")
    block = readme_block("nginx")
    for old, new in {
        "listen 443 ssl;": f"listen 127.0.0.1:{listen} ssl;",
        "server_name zarniwoop.example.org;": "server_name 127.0.0.1;",
        "/etc/ssl/zarniwoop/fullchain.pem": cert,
        "/etc/ssl/zarniwoop/privkey.pem": key,
        "http://127.0.0.1:8765": f"http://127.0.0.1:{upstream}",
    }.items():
        assert old in block, f"the README's nginx block no longer has {old!r}"
        block = block.replace(old, new)
    (tmp_path / "logs").mkdir(exist_ok=True)
    main = tmp_path / "nginx.conf"
    main.write_text(
        f"worker_processes 1;\nerror_log {tmp_path}/logs/error.log;\npid {tmp_path}/nginx.pid;\n"
        "events { worker_connections 64; }\n"
        f"http {{\n  access_log off;\n  client_body_temp_path {tmp_path}/body;\n"
        f"  proxy_temp_path {tmp_path}/proxy;\n{block}}}\n"
    )
    return main


@contextmanager
def behind_nginx(tmp_path: Path, config: Path, listen: int, *serve_args: str) -> Iterator[Served]:
    """`serve --host 127.0.0.1` with the README's nginx block in front of it on `listen`."""
    if NGINX is None:
        pytest.skip("nginx is not installed (Debian: apt-get install nginx-light)")
    with served(config, tmp_path / "home", "--auth", "oauth", *serve_args) as server:
        upstream = int(server.url.rsplit(":", 1)[1])
        (tmp_path / "nginx").mkdir()
        conf = nginx_config(tmp_path / "nginx", listen, upstream)
        nginx = subprocess.Popen(
            [NGINX, "-p", str(tmp_path / "nginx"), "-c", str(conf), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:

            def accepts() -> bool:  # until it accepts connections (or has exited)
                if nginx.poll() is not None:
                    pytest.fail(f"nginx did not start: {nginx.stderr.read() if nginx.stderr else ''}")
                try:
                    socket.create_connection(("127.0.0.1", listen), timeout=1).close()
                    return True
                except OSError:
                    return False

            until(accepts, "nginx to accept connections")
            yield server
        finally:
            nginx.terminate()
            nginx.wait(timeout=60)


@pytest.fixture
def proxied(tmp_path, emulator):
    listen = free_port()
    public = f"https://127.0.0.1:{listen}"
    idp = TestIssuer(emulator)
    config = write_config(
        tmp_path,
        {"settings": mount_recorded(emulator), "auth": {**idp.config(), "resource": public}},
    )
    with behind_nginx(tmp_path, config, listen):
        yield public, idp, str(tmp_path / "nginx" / "cert.pem")


async def test_the_mcp_client_connects_through_the_readme_nginx_config(proxied):
    public, idp, cert = proxied
    trust = ssl.create_default_context(cafile=cert)
    async with httpx2.AsyncClient(verify=trust, timeout=30) as http:
        refused = await http.post(f"{public}/mcp", json={})
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{public}/.well-known/oauth-protected-resource"'
        )
        metadata = (await http.get(f"{public}/.well-known/oauth-protected-resource")).json()
        assert metadata["resource"].rstrip("/") == public
        assert [a.rstrip("/") for a in metadata["authorization_servers"]] == [ISSUER]

    token = idp.token(
        aud=public, zarniwoop_tenant="default", zarniwoop_project="default", scope="zarniwoop:user"
    )
    heard: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append(message or "")

    async with (
        httpx2.AsyncClient(verify=trust, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(f"{public}/mcp", http_client=http)) as client,
    ):
        assert len((await client.list_tools()).tools) == 5
        result = await client.call_tool(
            "research_investigate", CALLS["research_investigate"], progress_callback=progress
        )
    assert not result.is_error
    searches = len(result.structured_content["searches"])
    assert [m.split(":")[0] for m in heard] == [
        "plan",
        *["search"] * searches,
        "dedup",
        "evaluate",
        "insights",
    ]


async def test_the_sdk_client_signs_in_to_the_builtin_server_through_the_readme_nginx(tmp_path, emulator):
    """The README's config as written (`builtin: true`), its nginx block, `serve --host 127.0.0.1`:
    discovery, registration, consent and the five tools, all through TLS and the proxy."""
    from mcp.shared.auth import OAuthClientMetadata

    from .test_oauth_builtin import REDIRECT, Browser, MemoryStorage

    blocks = re.findall(r"```yaml\n(.*?)```", README.read_text(), flags=re.S)
    quick_start = next(b for b in blocks if "builtin: true" in b and "resource:" in b)
    readme_auth = yaml.safe_load(quick_start)["auth"]
    listen = free_port()
    public = f"https://127.0.0.1:{listen}"
    assert readme_auth["resource"] == "https://zarniwoop.example.org"
    config = write_config(
        tmp_path,
        {
            "settings": mount_recorded(emulator),
            "auth": {**readme_auth, "resource": public},
            "tenants": {"acme": {"projects": {"review": {}}}},
        },
    )
    created = run_cli("--config", str(config), "--tenant", "acme", "tokens", "create", "--role", "tenant-admin",
                      "--json", home=tmp_path / "home")  # fmt: skip
    assert created.code == 0, created.stderr
    with behind_nginx(tmp_path, config, listen):
        trust = ssl.create_default_context(cafile=str(tmp_path / "nginx" / "cert.pem"))
        browser = Browser(public, json.loads(created.stdout)["token"], {"project": "review", "role": "user"})
        browser.verify = trust
        provider = OAuthClientProvider(
            server_url=f"{public}/mcp",
            client_metadata=OAuthClientMetadata(
                client_name="connector",
                redirect_uris=[REDIRECT],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=MemoryStorage(),
            redirect_handler=browser.redirect,
            callback_handler=browser.callback,
        )
        async with (
            httpx2.AsyncClient(auth=provider, verify=trust, timeout=60) as http,
            Client(streamable_http_client(f"{public}/mcp", http_client=http)) as client,
        ):
            assert {t.name for t in (await client.list_tools()).tools} == set(REQUIRED_ONLY)
            for name, arguments in REQUIRED_ONLY.items():
                result = await client.call_tool(name, arguments)
                assert not result.is_error, (name, result.content[0].text)
    assert "Grant access to Zarniwoop" in browser.consent_page

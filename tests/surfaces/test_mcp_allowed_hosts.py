"""`/mcp` answers the names the operator gave the server, not only its bind address (issue 45).

A real `zarniwoop serve` bound to 127.0.0.1 with `auth.resource: https://zarniwoop.example.org` and
`http.allowedHosts: mcp.internal, other.example:8443`: an MCP `initialize` with `Host` set to the
public name (with or without its port, as nginx's `Host $host` sends it), to an allowed name, or to
loopback without a port is answered; `Host: evil.example` (a DNS-rebinding page) is still a 421,
and a foreign `Origin` a 403. The `host_check` rules one by one as well.
"""

from __future__ import annotations

import httpx
import pytest

from zarniwoop.surfaces.http.allowed_hosts import host_check

from ..support.mcp_stdio import INITIALIZE
from ..support.oauth import TestIssuer
from ..support.runtime import write_config
from ..support.served import served
from ..support.tool_calls import mount_recorded

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group(__name__)]
PUBLIC = "https://zarniwoop.example.org"


def test_the_names_come_from_the_resource_and_the_setting_not_the_bind_address():
    check = host_check("127.0.0.1", "https://zarniwoop.example.org", ["mcp.internal", " Other.example:8443 "])
    assert check is not None
    for allowed in (
        "zarniwoop.example.org",
        "zarniwoop.example.org:*",
        "127.0.0.1",
        "127.0.0.1:*",
        "[::1]:*",
    ):
        assert allowed in check.hosts
    assert ("mcp.internal:*" in check.hosts, "other.example:8443" in check.hosts) == (True, True)
    assert "other.example:8443:*" not in check.hosts and "evil.example" not in check.hosts
    assert "https://zarniwoop.example.org" in check.origins
    assert host_check("0.0.0.0", PUBLIC, []) is None  # a non-loopback bind checks only when asked
    asked = host_check("0.0.0.0", None, ["mcp.internal"])
    assert asked is not None and "mcp.internal" in asked.hosts and "127.0.0.1:*" in asked.hosts


@pytest.fixture
def server(tmp_path, emulator):
    idp = TestIssuer(emulator)
    settings = {**mount_recorded(emulator), "http.allowedHosts": "mcp.internal, other.example:8443"}
    config = write_config(tmp_path, {"settings": settings, "auth": {**idp.config(), "resource": PUBLIC}})
    with served(config, tmp_path / "home", "--auth", "oauth") as running:
        assert running.token is not None  # the admin token printed on loopback
        yield running


async def test_a_loopback_server_answers_its_public_and_allowed_names_and_refuses_others(server):
    async def initialize(host: str, origin: str | None = None) -> httpx.Response:
        headers = {
            "Host": host,
            "Authorization": f"Bearer {server.token}",
            "Accept": "application/json, text/event-stream",
            **({"Origin": origin} if origin else {}),
        }
        async with httpx.AsyncClient(timeout=60) as http:
            return await http.post(f"{server.url}/mcp", json=INITIALIZE, headers=headers)

    port = server.url.rsplit(":", 1)[1]
    for host in ("zarniwoop.example.org", "zarniwoop.example.org:443", "mcp.internal", "other.example:8443",
                 "127.0.0.1", f"127.0.0.1:{port}", f"localhost:{port}"):  # fmt: skip
        answer = await initialize(host)
        assert answer.status_code == 200, (host, answer.status_code, answer.text)
    assert (await initialize("zarniwoop.example.org", origin=PUBLIC)).status_code == 200
    for host in (
        "evil.example",
        f"evil.example:{port}",
        "other.example:9999",
        "zarniwoop.example.org.evil.example",
    ):
        refused = await initialize(host)
        assert refused.status_code == 421, (host, refused.status_code)
    assert (await initialize("zarniwoop.example.org", origin="https://evil.example")).status_code == 403

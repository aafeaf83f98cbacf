"""Outbound proxies (issue 13): provider and LLM calls go through a loopback forward proxy when
`HTTP(S)_PROXY` or `http.proxy` says so, bypass it for a `NO_PROXY` host, and the content fetcher
still refuses a private target with a proxy configured."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from zarniwoop.contract import TargetRefusedError
from zarniwoop.surfaces.cli import app
from zarniwoop.transport.fetch import GuardedFetcher
from zarniwoop.transport.proxies import ProxySettings

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.llm import ANTHROPIC_PATH, KEYS, anthropic_reply, seed_tenants, trusting
from ..support.runtime import endpoint, only, write_config

pytestmark = pytest.mark.anyio
WIKI = "/w/w/rest.php/v1/search/page"


class ForwardProxy:
    """A plain HTTP forward proxy on loopback that records the absolute-form targets it relays."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _relay(self) -> None:
                proxy.seen.append(f"{self.command} {self.path}")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in ("host", "proxy-connection")
                }
                request = urllib.request.Request(self.path, data=body, headers=headers, method=self.command)
                opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
                try:
                    with opener.open(request, timeout=60) as answer:
                        status, payload, reply_headers = answer.status, answer.read(), answer.headers
                except urllib.error.HTTPError as exc:
                    status, payload, reply_headers = exc.code, exc.read(), exc.headers
                self.send_response(status)
                for key, value in reply_headers.items():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _relay

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> ForwardProxy:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy() -> Iterator[ForwardProxy]:
    with ForwardProxy() as running:
        yield running


def _search(config, *args: str):
    return CliRunner().invoke(
        app, ["--config", str(config), "search", "aurora", "-m", "encyclopedia", "--json", *args]
    )


def test_the_environment_proxy_carries_provider_calls_and_no_proxy_bypasses_it(
    tmp_path, home, emulator, proxy, monkeypatch
):
    emulator.add(WIKI, Reply.json(wikipedia_pages("Aurora")))
    port = emulator.url.rsplit(":", 1)[1]
    settings = {
        **only(),
        **endpoint("via-proxy", "wikipedia", f"http://127.0.0.1:{port}/w"),
        **endpoint("direct", "wikipedia", f"http://localhost:{port}/w", enabled=False),
    }
    config = write_config(tmp_path, {"settings": settings})
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "localhost")
    result = _search(config)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["providerInstanceId"] == "via-proxy"
    assert proxy.seen == [f"GET http://127.0.0.1:{port}/w/w/rest.php/v1/search/page?q=aurora&limit=10"]
    listing = json.loads(CliRunner().invoke(app, ["--config", str(config), "providers", "--json"]).stdout)
    shown = {p["id"]: p.get("proxy") for p in listing["providers"]}
    assert shown["via-proxy"] == proxy.url and shown["direct"] is None
    # the NO_PROXY host goes direct
    bypass = {
        **settings,
        "research.endpoint.via-proxy.enabled": False,
        "research.endpoint.direct.enabled": True,
    }
    # --no-cache: the first answer is in the cache every process of this home shares
    result = _search(write_config(tmp_path, {"settings": bypass}), "--no-cache")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["providerInstanceId"] == "direct"
    assert len(proxy.seen) == 1 and len(emulator.requests(WIKI)) == 2


def test_the_config_files_proxy_carries_llm_calls(tmp_path, home, emulator, proxy):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    config = write_config(
        tmp_path, {"settings": trusting(), "tenants": seed_tenants(emulator), "http": {"proxy": proxy.url}}
    )
    runner = CliRunner()
    for (level, owner, name), value in KEYS.items():
        args = ["--config", str(config), "--tenant", "acme", "credentials", "set", name]
        assert (
            runner.invoke(app, args + ([f"--{level}", owner] if owner else []), input=value + "\n").exit_code
            == 0
        )
    asked = runner.invoke(
        app,
        ["--config", str(config), "--tenant", "acme", "llm", "ask", "hi", "--account", "mike",
         "--project", "transformer-review", "--json"],
    )  # fmt: skip
    assert asked.exit_code == 0, asked.stderr
    assert [line.split(" ")[1].endswith(ANTHROPIC_PATH) for line in proxy.seen] == [True]


async def test_the_fetcher_checks_the_real_target_before_any_proxy(proxy):
    proxies = ProxySettings.resolve(proxy.url, None, {})
    fetcher = GuardedFetcher(proxies=proxies)
    try:
        with pytest.raises(TargetRefusedError, match="loopback"):
            await fetcher.fetch("http://127.0.0.1:9/secret", max_bytes=1000, allow_private=False)
        with pytest.raises(TargetRefusedError, match="link-local"):
            await fetcher.fetch(
                "http://169.254.169.254/latest/meta-data/", max_bytes=1000, allow_private=False
            )
    finally:
        await fetcher.aclose()
    assert proxy.seen == []  # refused before the proxy ever saw it


def test_proxy_settings_rules():
    env = {"https_proxy": "http://user:pw@proxy.corp:3128", "NO_PROXY": "localhost, .internal,10.0.0.5"}
    settings = ProxySettings.resolve(None, None, env)
    assert settings.source == "environment" and settings.http is None
    assert settings.for_url("https://api.search.brave.com/res") == "http://user:pw@proxy.corp:3128"
    assert settings.shown_for("https://api.search.brave.com/res") == "http://***@proxy.corp:3128"
    assert (
        settings.for_url("https://wiki.internal/") is None
        and settings.for_url("https://internal/") is not None
    )
    assert (
        settings.for_url("https://localhost:8080/") is None and settings.for_url("https://10.0.0.5/") is None
    )
    assert settings.for_url("http://example.org/") is None  # no HTTP_PROXY
    assert ProxySettings.resolve("http://p:1", "*", env).for_url("https://x.org") is None


async def test_a_dead_proxy_or_one_answering_502_is_named_not_the_provider():
    """Issue 28: a proxy that refuses the connection or fails the CONNECT is blamed, not the provider."""
    import asyncio
    import socket

    from zarniwoop.contract import RequestSpec, TransportError
    from zarniwoop.transport.http import HttpTransport

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(refuse, "127.0.0.1", 0)
    failing = server.sockets[0].getsockname()[1]
    messages = []
    try:
        for port in (dead, failing):
            transport = HttpTransport(proxies=ProxySettings.resolve(f"http://127.0.0.1:{port}", None, {}))
            try:
                with pytest.raises(TransportError) as caught:
                    await transport.send(RequestSpec("GET", "https://en.wikipedia.org/w/api.php"), timeout=60)
                messages.append(caught.value.message)
                assert caught.value.cause == "proxy"
            finally:
                await transport.aclose()
    finally:
        server.close()
    assert messages == [
        f"network error: cannot reach proxy 127.0.0.1:{dead} (connection to 127.0.0.1:{dead} refused)",
        f"network error: proxy 127.0.0.1:{failing} answered HTTP 502 for en.wikipedia.org:443",
    ]

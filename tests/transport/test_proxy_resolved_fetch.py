"""Content fetches behind a proxy that does the DNS (issue 28 item 8): the proxy resolves the name,
the SSRF rules still apply to the host name and to every address this machine can see."""

from __future__ import annotations

import asyncio
import ipaddress

import pytest

from zarniwoop.contract.errors import TargetRefusedError, TransportError
from zarniwoop.transport.fetch import GuardedFetcher
from zarniwoop.transport.guard import internal_name
from zarniwoop.transport.proxies import ProxySettings

pytestmark = pytest.mark.anyio


class ForwardProxy:
    """A plain-HTTP forward proxy on loopback that answers every absolute-URI GET itself."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __aenter__(self) -> ForwardProxy:
        self.server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        self.seen.append(head.split("\r\n", 1)[0])
        body = b"%PDF-1.4 proxied"
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/pdf\r\nConnection: close\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()


def fetcher(proxy: str, resolver=None) -> GuardedFetcher:
    return GuardedFetcher(proxies=ProxySettings.resolve(proxy, None, {}), resolver=resolver)


async def test_a_name_this_machine_cannot_resolve_is_left_to_the_proxy():
    async with ForwardProxy() as proxy:
        guarded = fetcher(proxy.url)  # the suite's resolver refuses every public name, as offline
        try:
            page = await guarded.fetch("http://example.org/paper.pdf", max_bytes=1000, allow_private=False)
        finally:
            await guarded.aclose()
    assert (page.status, page.body, page.mime_type) == (200, b"%PDF-1.4 proxied", "application/pdf")
    assert proxy.seen == ["GET http://example.org/paper.pdf HTTP/1.1"]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://intranet/wiki", "intranet is a single-label name, which the proxy would reach inside"),
        ("http://localhost/", "localhost is localhost, which the proxy would reach inside"),
        ("http://db.internal/", "db.internal is a .internal name, which the proxy would reach inside"),
        ("http://printer.local/", "printer.local is a .local name, which the proxy would reach inside"),
        ("http://127.0.0.1:8765/v1/settings", "127.0.0.1 is a loopback address"),
        ("http://[::ffff:10.0.0.5]/", "which is a private address"),
        ("http://rebind.example/", "rebind.example resolves to 10.1.2.3, which is a private address"),
    ],
)
async def test_the_rules_still_apply_to_the_name_and_every_address_seen(url, reason):
    async def resolver(host: str, port: int):
        if host == "rebind.example":  # this machine sees a private address: refused, proxy or not
            return [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("10.1.2.3")]
        raise OSError("not resolvable here")

    async with ForwardProxy() as proxy:
        guarded = fetcher(proxy.url, resolver)
        try:
            with pytest.raises(TargetRefusedError) as refused:
                await guarded.fetch(url, max_bytes=1000, allow_private=False)
        finally:
            await guarded.aclose()
    assert reason in refused.value.message
    assert proxy.seen == []  # refused before the proxy saw anything


async def test_without_a_proxy_an_unresolvable_name_is_still_an_error():
    guarded = GuardedFetcher()
    try:
        with pytest.raises(TransportError, match=r"^network error: cannot resolve example\.org$"):
            await guarded.fetch("http://example.org/", max_bytes=10, allow_private=False)
    finally:
        await guarded.aclose()


def test_internal_names():
    assert internal_name("example.org") is None
    assert internal_name("nas.home.arpa") == "a .home.arpa name"
    assert internal_name("EXAMPLE.") == "a single-label name"

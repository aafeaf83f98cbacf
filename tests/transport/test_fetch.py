"""The SSRF guard of the content fetcher: address classes, resolution, redirects, the size cap."""

from __future__ import annotations

import ipaddress

import pytest

from zarniwoop.contract import ProviderHTTPError, TargetRefusedError, TransportError
from zarniwoop.transport.fetch import GuardedFetcher, address_problem

from ..support.emulator import Reply

pytestmark = pytest.mark.anyio
LOOPBACK = ipaddress.ip_address("127.0.0.1")


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("10.0.0.7", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("fc00::1", "private"),
        ("100.64.0.1", "non-global"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.251", "multicast"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
        ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of 169.254.169.254
        ("2002:7f00:1::1", "loopback"),  # 6to4 of 127.0.0.1
        ("93.184.215.14", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_address_classes(address, problem):
    assert address_problem(ipaddress.ip_address(address)) == problem


def public_port(port: int):
    """An address policy that declares one loopback port "public" (and nothing else)."""
    return lambda ip, p: ip == LOOPBACK and p == port


def resolver(table: dict[str, str]):
    async def resolve(host: str, port: int):
        if host not in table:
            raise OSError(f"unknown host {host}")
        return [ipaddress.ip_address(table[host])]

    return resolve


async def fetch(fetcher: GuardedFetcher, url: str, cap: int = 1 << 20, allow_private: bool = False):
    try:
        return await fetcher.fetch(url, max_bytes=cap, allow_private=allow_private, timeout=60)
    finally:
        await fetcher.aclose()


async def test_loopback_and_metadata_addresses_are_refused_before_connecting(emulator):
    emulator.add("/doc", Reply(body=b"secret"))
    with pytest.raises(TargetRefusedError) as caught:
        await fetch(GuardedFetcher(), f"{emulator.url}/doc")
    assert caught.value.field == "url"
    assert "127.0.0.1 is a loopback address" in caught.value.message
    assert "research.content.allowPrivate" in caught.value.message
    with pytest.raises(TargetRefusedError, match=r"169\.254\.169\.254 is a link-local address"):
        await fetch(GuardedFetcher(), "http://169.254.169.254/latest/meta-data/iam/")
    with pytest.raises(TargetRefusedError, match="loopback"):
        await fetch(GuardedFetcher(), f"http://[::1]:{emulator.url.rsplit(':', 1)[1]}/doc")
    assert emulator.requests() == []


async def test_a_name_resolving_to_a_private_address_is_refused_after_resolution():
    fetcher = GuardedFetcher(resolver=resolver({"intranet.example": "10.0.0.7"}))
    with pytest.raises(
        TargetRefusedError, match=r"intranet\.example resolves to 10\.0\.0\.7, which is a private"
    ):
        await fetch(fetcher, "https://intranet.example/wiki")


async def test_other_schemes_are_refused():
    with pytest.raises(TargetRefusedError, match="only http and https"):
        await fetch(GuardedFetcher(), "file:///etc/passwd")
    with pytest.raises(TargetRefusedError, match="only http and https"):
        await fetch(GuardedFetcher(), "gopher://127.0.0.1:70/")


async def test_connects_to_the_checked_address_and_keeps_the_host_name(emulator):
    port = int(emulator.url.rsplit(":", 1)[1])
    emulator.add("/paper", Reply(body=b"%PDF-1.7 body", headers={"Content-Type": "application/pdf"}))
    fetcher = GuardedFetcher(
        resolver=resolver({"papers.example": "127.0.0.1"}), address_allowed=public_port(port)
    )
    page = await fetch(fetcher, f"http://papers.example:{port}/paper")
    assert page.body == b"%PDF-1.7 body"
    assert page.mime_type == "application/pdf"
    assert page.truncated is False
    [request] = emulator.requests("/paper")
    assert request.header("host") == f"papers.example:{port}"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("http://169.254.169.254/latest/meta-data/", r"169\.254\.169\.254 is a link-local address"),
        ("http://127.0.0.1:{other}/admin", r"127\.0\.0\.1 is a loopback address"),
        (
            "http://localhost:{other}/admin",
            r"localhost resolves to (127\.0\.0\.1|::1), which is a loopback address",
        ),
        (
            "http://intranet.example/",
            r"intranet\.example resolves to 10\.0\.0\.7, which is a private address",
        ),
    ],
)
async def test_a_redirect_from_an_allowed_host_to_a_private_target_is_refused(emulator, target, message):
    port = int(emulator.url.rsplit(":", 1)[1])
    location = target.format(other=port + 1 if port < 65535 else port - 1)
    emulator.add("/start", Reply(status=302, headers={"Location": location}))

    async def resolve(host: str, p: int):
        if host == "intranet.example":
            return [ipaddress.ip_address("10.0.0.7")]
        from zarniwoop.transport.fetch import resolve_host

        return await resolve_host(host, p)

    fetcher = GuardedFetcher(resolver=resolve, address_allowed=public_port(port))
    with pytest.raises(TargetRefusedError, match=message) as caught:
        await fetch(fetcher, f"{emulator.url}/start")
    assert caught.value.message.startswith(f"url: redirect from {emulator.url}/start to {location} refused:")
    assert len(emulator.requests("/start")) == 1


async def test_redirects_within_allowed_targets_are_followed_and_recorded(emulator):
    port = int(emulator.url.rsplit(":", 1)[1])
    emulator.add("/a", Reply(status=301, headers={"Location": "/b"}))
    emulator.add("/b", Reply(status=307, headers={"Location": f"{emulator.url}/c"}))
    emulator.add("/c", Reply(body=b"done", headers={"Content-Type": "text/plain; charset=utf-8"}))
    page = await fetch(GuardedFetcher(address_allowed=public_port(port)), f"{emulator.url}/a")
    assert page.body == b"done"
    assert page.final_url == f"{emulator.url}/c"
    assert page.redirects == (f"{emulator.url}/b", f"{emulator.url}/c")
    assert page.mime_type == "text/plain"


async def test_redirect_loops_end(emulator):
    emulator.add("/loop", Reply(status=302, headers={"Location": "/loop"}))
    with pytest.raises(Exception, match="more than 5 redirects"):
        await fetch(GuardedFetcher(), f"{emulator.url}/loop", allow_private=True)


@pytest.mark.parametrize("location", ["http://[::1", "http://[::1/x", "http://host.example:port/"])
@pytest.mark.parametrize("allow_private", [False, True])
async def test_a_malformed_redirect_target_is_refused_as_the_transport_refuses(
    emulator, location, allow_private
):
    # Before the SSRF check and the proxy choice, which would raise ValueError on such a URL.
    port = int(emulator.url.rsplit(":", 1)[1])
    emulator.add("/start", Reply(status=302, headers={"Location": location}))
    fetcher = GuardedFetcher(address_allowed=public_port(port))
    with pytest.raises(TransportError) as caught:
        await fetch(fetcher, f"{emulator.url}/start", allow_private=allow_private)
    assert caught.value.message == "redirect to a malformed URL refused (from 127.0.0.1)"
    assert len(emulator.requests("/start")) == 1


async def test_reading_stops_at_the_cap_without_downloading_the_rest(emulator):
    # Four chunks an hour apart: that the fetch returns at all shows it did not wait for the second
    # (reading on would outlast the fetch's own read timeout and fail it): an order, not a time.
    emulator.add("/big", Reply(body=b"a" * 400_000, chunk_delay=3600.0, chunks=4))
    page = await fetch(GuardedFetcher(), f"{emulator.url}/big", cap=1000, allow_private=True)
    assert len(page.body) == 1000
    assert page.truncated is True
    assert len(emulator.requests("/big")) == 1 and emulator.completed("/big") == []


async def test_a_body_exactly_at_the_cap_is_not_truncated(emulator):
    emulator.add("/exact", Reply(body=b"b" * 1000))
    page = await fetch(GuardedFetcher(), f"{emulator.url}/exact", cap=1000, allow_private=True)
    assert page.body == b"b" * 1000
    assert page.truncated is False


async def test_error_status_is_an_http_error(emulator):
    emulator.add("/gone", Reply(status=404, body=b"not here"))
    with pytest.raises(ProviderHTTPError, match=r"HTTP 404 from 127\.0\.0\.1") as caught:
        await fetch(GuardedFetcher(), f"{emulator.url}/gone", allow_private=True)
    assert caught.value.status == 404

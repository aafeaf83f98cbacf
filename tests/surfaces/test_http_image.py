"""The image proxy (issue 14): signed URLs only, the content fetcher's SSRF guard, image/* only,
a size cap; search answers carry the signed thumbnail URL."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from zarniwoop.surfaces.http import create_app
from zarniwoop.surfaces.http.routes.image import MAX_BYTES, proxy_url, sign_thumbnails

from ..support.emulator import Reply
from ..support.runtime import only, write_config


def png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def proxy(tmp_path, emulator) -> Iterator[tuple[TestClient, object]]:
    emulator.add("/img/ok.png", Reply(body=png(), headers={"Content-Type": "image/png"}))
    emulator.add("/img/page.html", Reply(body=b"<html>hi</html>", headers={"Content-Type": "text/html"}))
    emulator.add(
        "/img/huge.png",
        Reply(body=b"\x89PNG" + b"0" * (MAX_BYTES + 10), headers={"Content-Type": "image/png"}),
    )
    app = create_app(config=write_config(tmp_path, {"settings": only()}), home=tmp_path / "home")
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, app.state.zarniwoop.runtime


def _public(runtime) -> None:
    """Let the fetcher treat the loopback emulator as a public host (the test's stand-in for one)."""
    runtime.content.fetcher.address_allowed = lambda address, port: True


def test_unsigned_or_tampered_urls_are_refused(proxy, emulator):
    client, runtime = proxy
    url = f"{emulator.url}/img/ok.png"
    assert client.get(f"/v1/image?url={quote(url)}&sig=0000").status_code == 403
    signed = proxy_url(runtime.box.sign, url)
    assert client.get(signed.replace("ok.png", "ok2.png")).status_code == 403
    assert emulator.requests("/img/ok.png") == []


def test_a_private_target_is_refused_by_the_ssrf_guard(proxy, emulator):
    client, runtime = proxy
    answer = client.get(proxy_url(runtime.box.sign, f"{emulator.url}/img/ok.png"))
    assert answer.status_code == 403 and "loopback" in answer.json()["error"]["message"]
    assert emulator.requests("/img/ok.png") == []


def test_images_only_within_the_cap_and_cached(proxy, emulator):
    client, runtime = proxy
    _public(runtime)
    ok = client.get(proxy_url(runtime.box.sign, f"{emulator.url}/img/ok.png"))
    assert ok.status_code == 200 and ok.headers["content-type"] == "image/png" and ok.content == png()
    assert client.get(proxy_url(runtime.box.sign, f"{emulator.url}/img/ok.png")).content == png()
    assert len(emulator.requests("/img/ok.png")) == 1  # the second one came from the proxy's cache
    html = client.get(proxy_url(runtime.box.sign, f"{emulator.url}/img/page.html"))
    assert html.status_code == 415 and "text/html" in html.json()["error"]["message"]
    huge = client.get(proxy_url(runtime.box.sign, f"{emulator.url}/img/huge.png"))
    assert huge.status_code == 413


def test_hits_with_images_carry_a_signed_proxy_url(proxy):
    _, runtime = proxy
    structured = {
        "results": {
            "IMAGE": {"hits": [{"extras": {"thumbnailUrl": "https://img.example/a.jpg"}}, {"extras": {}}]}
        }
    }
    sign_thumbnails(structured, runtime.box.sign)
    first, second = structured["results"]["IMAGE"]["hits"]
    assert first["extras"]["thumbnailProxy"] == proxy_url(runtime.box.sign, "https://img.example/a.jpg")
    assert first["extras"]["thumbnailProxy"].startswith(
        "/v1/image?url=https%3A%2F%2Fimg.example%2Fa.jpg&sig="
    )
    assert "thumbnailProxy" not in second["extras"]


def test_a_served_image_hit_carries_its_signed_thumbnail(tmp_path, emulator):
    """End to end: an IMAGE search answer over HTTP carries the proxy URL the web UI shows."""
    from ..support.runtime import endpoint

    emulator.add(
        "/sx/search",
        Reply.json(
            {
                "query": "aurora",
                "results": [
                    {
                        "title": "Aurora",
                        "url": "https://img.example/page",
                        "img_src": "https://img.example/a.jpg",
                        "thumbnail_src": "https://img.example/a-thumb.jpg",
                        "category": "images",
                    }
                ],
            }
        ),
    )
    settings = {**only(), **endpoint("sx", "searxng", f"{emulator.url}/sx"), "research.cache.ttlSeconds": 0}
    app = create_app(config=write_config(tmp_path, {"settings": settings}), home=tmp_path / "home")
    with TestClient(app) as client:
        runtime = app.state.zarniwoop.runtime
        token = client.portal.call(runtime.tokens.create, "default", "default", "user").token
        answer = client.post(
            "/v1/research/search",
            json={"query": "aurora", "modality": "image"},
            headers={"Authorization": f"Bearer {token}"},
        ).json()
        extras = answer["hits"][0]["extras"]
        source = extras.get("thumbnailUrl") or extras.get("imageUrl")
        assert extras["thumbnailProxy"] == proxy_url(runtime.box.sign, source)


MALFORMED_SIGNATURES = [
    "%C3%98",  # Ø: a non-ASCII str made hmac.compare_digest raise (issue 25 item 7)
    "%C3%98" * 16,
    "%E2%82%AC",
    "%F0%9F%98%80",
    "%ED%A0%80",  # an encoded lone surrogate, not valid UTF-8
    "%FF%FE",
    "%00",
    "%0D%0A",
    "%C0%AF",
    "",
    "+",
    "%20" * 32,
    "0" * 31,
    "0" * 33,
    "g" * 32,
    "%25" * 10,
    "abc%C3",
    "%C3%98" + "0" * 30,
    "Ω" * 8,
    "\u202e" * 4,
]


def test_malformed_signatures_are_403_never_500(proxy, emulator, caplog):
    client, _ = proxy
    url = quote(f"{emulator.url}/img/ok.png", safe="")
    caplog.set_level("DEBUG")
    statuses = [client.get(f"/v1/image?sig={each}&url={url}").status_code for each in MALFORMED_SIGNATURES]
    assert len(MALFORMED_SIGNATURES) == 20 and statuses == [403] * 20
    assert [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()] == []
    assert emulator.requests("/img/ok.png") == []

"""Network failures name the host, the port and the reason in plain words (issue 13), and are still
classified as transport errors / timeouts for cooldowns."""

from __future__ import annotations

import datetime as dt
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from zarniwoop.contract import ProviderTimeoutError, TransportError
from zarniwoop.contract.protocol import RequestSpec
from zarniwoop.transport.http import HttpTransport

pytestmark = pytest.mark.anyio


def _expired_chain(tmp_path) -> tuple[str, str, str]:
    """A CA the client trusts and a leaf for `localhost` it signed, expired yesterday."""
    now = dt.datetime.now(dt.UTC)
    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=30))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=10))
        .not_valid_after(now - dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = [tmp_path / n for n in ("ca.pem", "leaf.pem", "leaf.key")]
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return str(paths[0]), str(paths[1]), str(paths[2])


@pytest.fixture
def expired_tls(tmp_path) -> Iterator[tuple[int, str]]:
    ca, cert, key = _expired_chain(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # pragma: no cover - the handshake fails first
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], ca
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def black_hole() -> Iterator[int]:
    """Accepts connections and never answers: what a silently dropping middlebox looks like."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def hold() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _fail(url: str, trust: ssl.SSLContext | None = None, timeout: float = 2.0) -> Exception:
    transport = HttpTransport(ssl_context=trust)
    try:
        with pytest.raises((TransportError, ProviderTimeoutError)) as caught:
            await transport.send(RequestSpec("GET", url), timeout=timeout)
        return caught.value
    finally:
        await transport.aclose()


async def test_an_unresolvable_name_says_so(monkeypatch):
    real = socket.getaddrinfo

    def resolver(host, *args, **kwargs):
        if host == "en.wikipedia.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    error = await _fail("https://en.wikipedia.invalid/w/rest.php/v1/search/page?q=x")
    assert type(error) is TransportError
    assert error.message == "network error: cannot resolve en.wikipedia.invalid"


async def test_a_refused_port_names_host_and_port():
    port = _free_port()
    error = await _fail(f"http://127.0.0.1:{port}/search")
    assert type(error) is TransportError
    assert error.message == f"network error: connection to 127.0.0.1:{port} refused"


async def test_a_bad_certificate_names_the_reason(expired_tls):
    port, ca = expired_tls
    error = await _fail(f"https://localhost:{port}/search", ssl.create_default_context(cafile=ca))
    assert type(error) is TransportError
    assert (
        error.message == f"network error: TLS handshake with localhost:{port} failed: certificate has expired"
    )


async def test_a_silent_drop_names_the_host_and_the_wait(black_hole):
    error = await _fail(f"http://127.0.0.1:{black_hole}/search", timeout=0.5)
    assert type(error) is ProviderTimeoutError
    # the total deadline (by default the read timeout) ends it: the whole exchange had 0.5 s
    assert error.message == f"no complete answer from 127.0.0.1:{black_hole} within 0.5s"

"""A loopback TCP proxy that can be cut and restored: a database that becomes unreachable, for real.

    proxy = TcpProxy("127.0.0.1", 5432).start()     # listens on 127.0.0.1:<proxy.port>
    proxy.stop()                                     # refuse new connections, reset open ones
    proxy.start()                                    # the same port again

Threads, not asyncio, so it keeps working while the test's event loop is busy.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> TcpProxy:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Close the listener (new connections are refused) and reset every open connection."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=60)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


def proxied_postgres(postgres_url: str) -> tuple[TcpProxy, str]:
    """A started proxy in front of the test database, and the URL that reaches it through the proxy.

    The URL asks for no TLS: asyncpg's default (`prefer`) opens every connection with a TLS probe, and
    a probe the proxy resets reaches the event loop's exception handler as a `ConnectionError` from
    asyncio's SSL protocol — an error of the probe, not of the code under test."""
    base, schema = postgres_url.rsplit("?schema=", 1)
    proxy = TcpProxy("127.0.0.1", int(base.rsplit(":", 1)[1].split("/")[0])).start()
    database = base.rsplit("/", 1)[1]
    return proxy, f"postgresql://postgres@127.0.0.1:{proxy.port}/{database}?schema={schema}&sslmode=disable"

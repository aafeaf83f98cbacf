"""The suite itself is offline: a non-loopback connection fails at once."""

from __future__ import annotations

import socket

import pytest

from .conftest import NetworkBlockedError


@pytest.mark.parametrize("address", [("93.184.216.34", 80), ("10.0.0.1", 443), ("169.254.169.254", 80)])
def test_non_loopback_connect_is_refused_at_once(address):
    with socket.socket() as sock:
        sock.setblocking(False)  # a real attempt would raise BlockingIOError (in progress), not this
        with pytest.raises(NetworkBlockedError):
            sock.connect(address)
        with pytest.raises(OSError):
            sock.getpeername()  # refused before any connection was tried: none exists


def test_name_resolution_of_public_hosts_is_refused():
    with pytest.raises(NetworkBlockedError):
        socket.getaddrinfo("en.wikipedia.org", 443)


def test_loopback_is_allowed(emulator):
    with socket.create_connection(("127.0.0.1", int(emulator.url.rsplit(":", 1)[1])), timeout=1):
        pass

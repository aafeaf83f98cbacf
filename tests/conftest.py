"""Offline by default: any connection to a non-loopback address fails at once.

Also: a clean environment per test (no operator keys leak in), and an emulator fixture.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from .support import paths
from .support.emulator import Emulator

pytest_plugins = ["tests.support.backends"]  # database_url, postgres_url, redis_config

# Hypothesis (issue 24): properties take their example count from a profile, never from a number
# of their own. `fast`, the default, is what the README's command and CI run; `thorough`
# (HYPOTHESIS_PROFILE=thorough) is the deep pass to run by hand or on a schedule. No deadline in
# either: a busy machine stretching one example is not a failure.
settings.register_profile("fast", max_examples=25, deadline=None)
settings.register_profile("thorough", max_examples=300, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _is_loopback(host: object) -> bool:
    if not isinstance(host, str):
        return True
    if host in ("localhost", "", "::1"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


class NetworkBlockedError(OSError):
    pass


def _guard(address: object) -> None:
    if isinstance(address, tuple) and address and not _is_loopback(address[0]):
        raise NetworkBlockedError(f"tests may not reach the network (tried {address[0]!r})")


def _connect(self: socket.socket, address: object) -> None:
    _guard(address)
    return _real_connect(self, address)  # type: ignore[arg-type]


def _connect_ex(self: socket.socket, address: object) -> int:
    _guard(address)
    return _real_connect_ex(self, address)  # type: ignore[arg-type]


def _getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
    if not _is_loopback(host):
        raise NetworkBlockedError(f"tests may not resolve non-loopback hosts (tried {host!r})")
    return _real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]


def pytest_configure(config: pytest.Config) -> None:
    socket.socket.connect = _connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = _getaddrinfo  # type: ignore[assignment]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    """Note which test runs, so that `paths.shared_fixtures` can tell who reads ../shared."""
    paths.current_test = item.nodeid
    try:
        return (yield)
    finally:
        paths.current_test = None


def pytest_sessionfinish(session: pytest.Session) -> None:
    """`ZARNIWOOP_SHARED_READERS=DIR`: the tests that read ../shared, one node id a line, in
    `DIR/<xdist worker or "main">.txt` (.ci/run's standalone pass runs them without ../shared)."""
    folder = os.environ.get("ZARNIWOOP_SHARED_READERS")
    if folder and paths.readers:
        name = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.txt").write_text("".join(f"{n}\n" for n in sorted(paths.readers)))


OPERATOR_ENV = (
    "SERPER_API_KEY",
    "BRAVE_API_KEY",
    "EXA_API_KEY",
    "TAVILY_API_KEY",
    "NCBI_API_KEY",
    "GITHUB_TOKEN",
    "STACKEXCHANGE_KEY",
    "SEMANTIC_SCHOLAR_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "ZARNIWOOP_CONFIG",
    "ZARNIWOOP_TENANT",
    "ZARNIWOOP_PROJECT",
    "ZARNIWOOP_MASTER_KEY",
)


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    for name in OPERATOR_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path_factory.mktemp("home")))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`ZARNIWOOP_HOME` under the test's own folder, for tests that look inside it."""
    folder = tmp_path / "home"
    monkeypatch.setenv("ZARNIWOOP_HOME", str(folder))
    return folder


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    emu = Emulator().start()
    try:
        yield emu
    finally:
        emu.stop()

"""Offline by default: any connection to a non-loopback address fails at once.

Also: a clean environment per test (no operator keys leak in), and an emulator fixture.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import platform
import socket
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from .support import paths
from .support.emulator import Emulator

# The openai and anthropic SDKs describe the platform in a header on their first request, and
# `platform.processor()` asks `uname -p` for it: a process start, which the fast tier's guard
# refuses. Asked once here, before any guard, the answer is cached for the session.
platform.processor()
platform.platform()

pytest_plugins = [
    "tests.support.backends",  # database_url, postgres_url, redis_config
    "tests.support.grouping",  # under -n, fails the run when an xdist_group module ran on two workers
    "tests.support.skips",  # ZARNIWOOP_ALLOWED_SKIPS (CI): a skip the allow-list does not name fails the run
    "tests.support.processes",  # marks `process` the tests that start one, guards the others, counts
]

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


# The directories whose tests start servers, subprocesses and browsers: they are handed out first,
# so that the run ends on short in-process tests rather than on one long test while the other
# workers idle (tests/surfaces is three quarters of the suite's worker time).
_HEAVY_FIRST = ("tests/surfaces/", "tests/dispatch/", "tests/transport/")
# Module-scoped fixtures of conftests: a module using one is one xdist group (set up once, not once
# per worker that gets one of its tests). Modules with module-scoped fixtures of their own say so
# with `pytestmark = pytest.mark.xdist_group(...)`. `--dist loadfile` keeps every module on one
# worker; tests/support/grouping.py checks that each group did run on one.
_MODULE_SHARED = frozenset({"_module_emulator"})


@pytest.hookimpl(tryfirst=True)  # the order the workers collect is the order xdist hands modules out
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        if _MODULE_SHARED.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(root).as_posix()))

    def heaviness(item: pytest.Item) -> int:
        path = item.path.relative_to(root).as_posix()
        return next(
            (i for i, prefix in enumerate(_HEAVY_FIRST) if path.startswith(prefix)), len(_HEAVY_FIRST)
        )

    items.sort(key=heaviness)  # stable: collection order within each


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


class _TestLoop(asyncio.SelectorEventLoop):
    """The async tests' loop. It drops one error of a third party's that no test can act on: an
    httpx2 connection (the MCP SDK's client) opened on an earlier test's loop, garbage-collected
    during a later test, closes itself through the loop it was opened on — closed by then — and
    `RuntimeError: Event loop is closed` reached anyio's handler, failing whichever test was running
    (seen twice: a pydantic-ai test, an LLM URL-guard test; neither used the connection)."""

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        error = context.get("exception")
        if (
            isinstance(error, RuntimeError)
            and str(error) == "Event loop is closed"
            and _raised_in_httpcore2(error)
        ):
            return
        super().call_exception_handler(context)


def _raised_in_httpcore2(error: BaseException) -> bool:
    return any(
        frame.f_globals.get("__name__", "").startswith(("httpcore2.", "httpx2."))
        for frame, _ in traceback.walk_tb(error.__traceback__)
    )


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return "asyncio", {"loop_factory": _TestLoop}


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    emu = Emulator().start()
    try:
        yield emu
    finally:
        emu.stop()

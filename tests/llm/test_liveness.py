"""A local LLM server's probe (`llm/catalog/liveness.py`) over the real transport and a loopback emulator:
its listing is what it serves, a failure names why, and an answer stands for `ttl` seconds of an
injected clock — asked again only once that has passed."""

from __future__ import annotations

import socket

import pytest

from zarniwoop.llm.catalog.discovery import ProviderInstanceSettings
from zarniwoop.llm.catalog.liveness import LocalProbes
from zarniwoop.transport.http import HttpTransport

from ..support.clock import TestClock
from ..support.emulator import Emulator, Reply

pytestmark = pytest.mark.anyio


def _instance(url: str) -> ProviderInstanceSettings:
    return ProviderInstanceSettings("lab", "ollama", url, None)


async def test_a_probe_lists_what_the_server_serves_and_stands_for_its_ttl(emulator: Emulator) -> None:
    emulator.add("/o/api/tags", Reply.json({"models": [{"name": "qwen3:8b"}, {"name": "nomic-embed-text"}]}))
    clock = TestClock(1000.0)
    probes = LocalProbes(ttl=30.0, clock=clock)
    http = HttpTransport()
    try:
        first = await probes.check(http, _instance(emulator.url + "/o"))
        assert (first.ok, first.models) == (True, frozenset({"qwen3:8b"}))  # chat models only
        assert first.serves("qwen3:8b") and not first.serves("llama3.1")
        clock.advance(29.0)
        assert await probes.check(http, _instance(emulator.url + "/o")) is first
        assert len(emulator.requests("/o/api/tags")) == 1
        emulator.add("/o/api/tags", Reply(status=500))
        clock.advance(2.0)  # past the ttl: asked again, and now it fails
        again = await probes.check(http, _instance(emulator.url + "/o"))
        assert not again.ok and again.models == frozenset()
        assert len(emulator.requests("/o/api/tags")) == 2
    finally:
        await http.aclose()


async def test_a_server_nobody_runs_is_not_reachable_naming_why() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    http = HttpTransport()
    try:
        result = await LocalProbes().check(http, _instance(f"http://127.0.0.1:{port}"))
    finally:
        await http.aclose()
    assert not result.ok and result.reason
    assert "127.0.0.1" in result.reason or "refused" in result.reason.lower()


async def test_latest_is_the_tag_a_catalog_name_means(emulator: Emulator) -> None:
    emulator.add("/o/api/tags", Reply.json({"models": [{"name": "llama3.1:latest"}]}))
    http = HttpTransport()
    try:
        result = await LocalProbes().check(http, _instance(emulator.url + "/o"))
    finally:
        await http.aclose()
    assert result.serves("llama3.1") and result.serves("llama3.1:latest") and not result.serves("llama3")

"""The content store: STASH_ON_DEMAND through the provider, URL fetches under the SSRF guard,
the size cap from settings, and the workspace that `projects stop` removes."""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import threading
import time

import pytest

from zarniwoop import operations
from zarniwoop.content import store as content
from zarniwoop.content.store import ContentStore
from zarniwoop.contract import (
    ConfigError,
    ContentInline,
    InvalidRequestError,
    Modality,
    SearchHit,
    SearchRequest,
    SearchScope,
    TargetRefusedError,
)
from zarniwoop.transport.fetch import GuardedFetcher

from ..support.emulator import Reply
from ..support.providers_academic import add_pubmed
from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio
SCOPE = SearchScope("acme", "review")


def pubmed_settings(emulator, **extra):
    return {**only("pubmed"), **endpoint("pubmed", "pubmed", add_pubmed(emulator)), **extra}


async def test_stash_on_demand_hit_is_loaded_through_pubmed_efetch_and_saved_as_text(tmp_path, emulator):
    async with await open_runtime(tmp_path, pubmed_settings(emulator)) as rt:
        result = await rt.dispatcher.search(
            SearchRequest.create("biopython", "academic", max_results=2), SCOPE
        )
        hit = result.hits[0]
        assert hit.content.inline is ContentInline.STASH_ON_DEMAND
        store = rt.content
        try:
            loaded = await store.load_content(hit, SCOPE)
        finally:
            await store.aclose()
        assert loaded.provider == "pubmed"
        assert loaded.mime_type == "text/plain"
        assert loaded.truncated is False
        assert loaded.path.parent == rt.home / "workspace" / "acme" / "review" / "content"
        text = loaded.path.read_text()
        assert text.startswith("Is cryopreservation a homogeneous process?")
        assert "This study subdivides the cryopreservation procedure" in text
        assert loaded.size == len(text.encode())
        [fetch] = emulator.requests("/pubmed/efetch.fcgi")
        assert fetch.param("id") == "11850928"
        assert fetch.param("retmode") == "xml"

        assert await operations.stop_project(rt, SCOPE) >= 1
        assert not loaded.path.exists()
        assert not (rt.home / "workspace" / "acme" / "review").exists()


async def test_stash_cap_cuts_provider_content(tmp_path, emulator):
    settings = pubmed_settings(emulator, **{"research.content.maxBytes": 50})
    async with await open_runtime(tmp_path, settings) as rt:
        store = rt.content
        loaded = await store.load_ref("pubmed", "11748933", SCOPE)
        await store.aclose()
        assert loaded.size == 50
        assert loaded.truncated is True
        assert loaded.path.read_bytes() == b"Is cryopreservation a homogeneous process? Ultrast"


async def test_unknown_provider_is_a_clear_error(tmp_path, emulator):
    async with await open_runtime(tmp_path, pubmed_settings(emulator)) as rt:
        store = rt.content
        with pytest.raises(InvalidRequestError, match="no provider instance or protocol 'nosuch'"):
            await store.load_ref("nosuch", "1", SCOPE)
        await store.aclose()


async def test_default_settings_refuse_loopback_and_metadata_urls(tmp_path, emulator):
    emulator.add("/doc", Reply(body=b"internal"))
    async with await open_runtime(tmp_path, only()) as rt:
        store = rt.content
        try:
            hit = SearchHit("internal", f"{emulator.url}/doc", Modality.WEB)
            with pytest.raises(TargetRefusedError, match=r"127\.0\.0\.1 is a loopback address"):
                await store.load_content(hit, SCOPE)
            with pytest.raises(TargetRefusedError, match=r"169\.254\.169\.254 is a link-local address"):
                await store.fetch_url("http://169.254.169.254/latest/meta-data/", SCOPE)
        finally:
            await store.aclose()
    assert emulator.requests() == []
    assert not (tmp_path / "home" / "workspace" / "acme").exists()


async def test_redirect_from_a_public_host_to_loopback_is_refused(tmp_path, emulator):
    port = int(emulator.url.rsplit(":", 1)[1])
    emulator.add("/moved", Reply(status=302, headers={"Location": "http://127.0.0.1:1/admin"}))
    fetcher = GuardedFetcher(
        address_allowed=lambda ip, p: ip == ipaddress.ip_address("127.0.0.1") and p == port
    )
    async with await open_runtime(tmp_path, only()) as rt:
        store = ContentStore(rt.home, rt.settings, rt.factory, fetcher=fetcher)
        with pytest.raises(
            TargetRefusedError, match=r"redirect from .*/moved to http://127.0.0.1:1/admin refused"
        ):
            await store.fetch_url(f"{emulator.url}/moved", SCOPE)
        await fetcher.aclose()


async def test_allow_private_fetches_and_caps_at_max_bytes(tmp_path, emulator):
    emulator.add("/page", Reply(body=b"<html>" + b"x" * 100_000, headers={"Content-Type": "text/html"}))
    settings = {**only(), "research.content.allowPrivate": True, "research.content.maxBytes": 4096}
    async with await open_runtime(tmp_path, settings) as rt:
        store = rt.content
        loaded = await store.load_content(SearchHit("page", f"{emulator.url}/page", Modality.WEB), SCOPE)
        await store.aclose()
    assert loaded.truncated is True
    assert loaded.size == 4096
    assert loaded.mime_type == "text/html"
    assert loaded.path.suffix == ".html"
    assert loaded.path.read_bytes().startswith(b"<html>xxx")
    assert loaded.to_json()["bytes"] == 4096


async def test_allow_private_is_the_operators_switch_only(tmp_path, emulator):
    emulator.add("/doc", Reply(body=b"ok"))
    # A tenant may not lift the SSRF guard for itself (issue 11): refused at start-up, naming the key.
    config = {"tenants": {"acme": {"settings": {"research.content.allowPrivate": True}}}}
    (tmp_path / "tenant").mkdir()
    with pytest.raises(ConfigError) as refused:
        await open_runtime(tmp_path / "tenant", only(), **config)
    assert refused.value.key == "research.content.allowPrivate"
    assert "system level only" in refused.value.reason
    async with await open_runtime(tmp_path, {**only(), "research.content.allowPrivate": True}) as rt:
        store = rt.content
        assert (await store.fetch_url(f"{emulator.url}/doc", SCOPE)).path.read_bytes() == b"ok"
        await store.aclose()


async def test_a_tenant_row_of_allow_private_is_ignored_when_read(tmp_path, emulator):
    emulator.add("/doc", Reply(body=b"ok"))
    async with await open_runtime(tmp_path, only()) as rt:
        await rt.settings.set(
            "acme", "_tenant", "research.content.allowPrivate", "true"
        )  # bypassing validation
        await rt.settings.refresh()
        with pytest.raises(TargetRefusedError):
            await rt.content.fetch_url(f"{emulator.url}/doc", SCOPE)
        await rt.content.aclose()


async def test_scope_names_cannot_escape_the_workspace(tmp_path):
    async with await open_runtime(tmp_path, only()) as rt:
        store = rt.content
        with pytest.raises(InvalidRequestError, match="project"):
            store.workspace(SearchScope("acme", "../../etc"))
        await store.aclose()


async def test_a_large_body_is_written_and_hashed_off_the_event_loop(tmp_path, emulator, monkeypatch):
    """Saving up to `maxBytes` (20 MiB by default) runs on a worker thread: while it writes and
    hashes, the event loop keeps running (inline, one pause would span the whole save)."""
    size = 20 * 1024 * 1024
    body = b"<html>" + b"z" * (size - 6)
    emulator.add("/big", Reply(body=body, headers={"Content-Type": "text/html"}))
    saves: list[tuple[str, float, float]] = []
    write_file = content._write_file

    def timed_write(path, data):
        begin = time.perf_counter()
        try:
            return write_file(path, data)
        finally:
            saves.append((threading.current_thread().name, begin, time.perf_counter()))

    monkeypatch.setattr(content, "_write_file", timed_write)
    settings = {**only(), "research.content.allowPrivate": True, "research.content.maxBytes": size}
    async with await open_runtime(tmp_path, settings) as rt:
        store = rt.content
        pauses: list[tuple[float, float]] = []

        async def watch() -> None:
            last = time.perf_counter()
            while True:
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                pauses.append((last, now))
                last = now

        watcher = asyncio.create_task(watch())
        loaded = await store.fetch_url(f"{emulator.url}/big", SCOPE)
        watcher.cancel()
        await store.aclose()
    assert loaded.size == size and loaded.truncated is False
    assert loaded.sha256 == hashlib.sha256(body).hexdigest()
    assert loaded.path.read_bytes() == loaded.body == body
    [(thread, begin, end)] = saves
    assert thread != threading.main_thread().name
    # ordered, not timed: the loop went round while the save was under way (inline, it could not)
    ticks = [b for _, b in pauses if begin < b < end]
    assert ticks, f"the loop did not run during a {end - begin:.3f}s save"

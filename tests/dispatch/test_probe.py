"""Free reachability probes (issue 16, seed 003): a keyless endpoint that is down shows
`reachable: false` with the probe's error before anyone searched; a keyed one is never probed."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from typer.testing import CliRunner

from zarniwoop import operations
from zarniwoop.surfaces.cli import app

from ..support.bodies import openalex_works
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, open_runtime, write_config
from ..support.served import served


def _settings(emulator) -> dict:
    return {
        **only(),
        **endpoint("oa-up", "openalex", f"{emulator.url}/up"),
        **endpoint("oa-down", "openalex", f"{emulator.url}/down"),
        **endpoint("paid", "serper", f"{emulator.url}/serper", apiKey="serper-key"),
        **endpoint("sx", "searxng", f"{emulator.url}/sx"),
        "research.probe.intervalSeconds": 1,
    }


def _routes(emulator) -> None:
    emulator.add("/up/works", Reply.json(openalex_works(1)))
    emulator.add("/down/works", Reply(status=503))
    emulator.add("/sx/healthz", Reply(body=b"OK", headers={"Content-Type": "text/plain"}))


def test_a_server_probes_keyless_endpoints_and_never_a_paid_one(tmp_path, emulator):
    _routes(emulator)
    config = write_config(tmp_path, {"settings": _settings(emulator)})
    with served(config, tmp_path / "home", probes=True) as server:
        auth = {"Authorization": f"Bearer {server.token}"}
        # waits for every probe asserted below (two rounds of each endpoint); the 60 s only end a
        # hung test, the asserts then say what was missing
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            entries = httpx.get(f"{server.url}/v1/research/providers", headers=auth).json()["providers"]
            by_id = {e["id"]: e for e in entries}
            if (
                all("lastProbe" in by_id[i] for i in ("oa-down", "oa-up", "sx"))
                and len(emulator.requests("/up/works")) >= 2
                and len(emulator.requests("/sx/healthz")) >= 2
            ):
                break
            time.sleep(0.2)
    assert by_id["oa-down"]["reachable"] is False
    assert (
        by_id["oa-down"]["lastProbe"]["ok"] is False and by_id["oa-down"]["lastProbe"]["error"] == "HTTP 503"
    )
    assert by_id["oa-up"]["reachable"] is True and by_id["sx"]["lastProbe"]["ok"] is True
    assert by_id["oa-down"]["availability"] == "READY"  # a probe sets no cooldown
    assert "lastProbe" not in by_id["paid"] and by_id["paid"]["reachable"] is None
    assert emulator.requests("/serper/search") == []  # a probe query costs money: never sent
    assert len(emulator.requests("/sx/healthz")) >= 2  # SearXNG's own health check, every interval
    assert emulator.requests("/sx/search") == []


def test_providers_probe_runs_the_probes_once(tmp_path, home, emulator):
    _routes(emulator)
    config = write_config(tmp_path, {"settings": _settings(emulator)})
    result = CliRunner().invoke(app, ["--config", str(config), "providers", "--probe", "--json"])
    assert result.exit_code == 0, result.stderr
    by_id = {e["id"]: e for e in json.loads(result.stdout)["providers"]}
    assert by_id["oa-down"]["reachable"] is False and by_id["oa-up"]["reachable"] is True
    assert [
        len(emulator.requests(p)) for p in ("/up/works", "/down/works", "/sx/healthz", "/serper/search")
    ] == [
        1,
        1,
        1,
        0,
    ]
    plain = CliRunner().invoke(app, ["--config", str(config), "providers", "--json"])
    assert "lastProbe" not in plain.stdout  # without --probe nothing is sent
    assert len(emulator.requests("/up/works")) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("interval", [0])
async def test_probes_can_be_switched_off(tmp_path, emulator, interval):
    """The probe loop a server runs (`operations.start_probes`: `serve --probes`, as in the first
    test) ends at once with the interval at 0, having sent nothing. In-process, so that the loop's
    end is the event waited for, not a sleep before looking."""
    _routes(emulator)
    settings = {**_settings(emulator), "research.probe.intervalSeconds": interval}
    async with await open_runtime(tmp_path, settings) as rt:
        prober = operations.start_probes(rt)
        await asyncio.wait_for(prober, timeout=120)  # a guard against a loop that never ends, no budget
    assert emulator.requests() == []

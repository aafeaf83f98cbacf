"""The whole SPI is honoured for an add-on installed by entry point only (seed 000 §4.5-4.6, §9.1):
`tiers` (a NORMAL-only protocol pinned for EXPERT → `skipped_unsupported`, never called), the
instance's own `availability()` (EXHAUSTED → `skipped_exhausted`, COOLDOWN → `skipped_cooldown`),
`status_text()` (in the attempts' reasons and in `providers --json`) and `domains`."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
import yaml
from typer.testing import CliRunner

from zarniwoop.protocols import load_protocols
from zarniwoop.surfaces.cli import app
from zarniwoop.tools.render import render_providers

from ..support.emulator import Reply
from ..support.runtime import endpoint, only

ADDON = '''
from zarniwoop.contract import (
    Availability, Modality, RequestSpec, SearchDomain, SearchHit, SearchPage, SearchResult, Tier,
)


class NormalOnly:
    """An HTTP protocol that declares NORMAL only: a pinned EXPERT search must not reach it."""

    id = "spi-normal"
    display_name = "Normal only"
    modalities = frozenset({Modality.CODE})
    tiers = frozenset({Tier.NORMAL})
    key_required = False
    prompt_hint = "Answers NORMAL searches only."

    def build_request(self, request, config):
        return RequestSpec("GET", config.base_url + "/s", params=(("q", request.query),))

    def parse_response(self, raw, spec, request):
        return SearchPage(hits=(SearchHit("Normal hit", "https://example.org/n", modality=Modality.CODE),))


class MeterInstance:
    """Reports its own availability and a status line, as a provider with its own quota API would."""

    def __init__(self, protocol, config):
        self._protocol, self._config = protocol, config

    id = property(lambda self: self._config.instance_id)
    protocol = property(lambda self: self._protocol)
    config = property(lambda self: self._config)

    def availability(self, scope):
        return Availability(self._config.extra("state", "READY"))

    def status_text(self, scope):
        return self._config.extra("status")

    def domains(self):
        return frozenset({SearchDomain.CODE, SearchDomain.TECH})

    async def search(self, request, scope, *, timeout):
        hit = SearchHit(f"{self.id} hit", f"https://example.org/{self.id}", modality=Modality.CODE)
        return SearchResult(request.query, request.modality, request.tier, self.id, hits=(hit,))

    async def load_content(self, ref, scope):
        raise NotImplementedError

    async def dispose(self):
        pass


class Meter:
    id = "spi-meter"
    display_name = "Metered add-on"
    modalities = frozenset({Modality.CODE})
    tiers = frozenset({Tier.NORMAL, Tier.EXPERT})
    key_required = False
    prompt_hint = "A metered code index."
    known_extras = frozenset({"state", "status"})

    def build_request(self, request, config):
        raise NotImplementedError

    def parse_response(self, raw, spec, request):
        raise NotImplementedError

    def instantiate(self, config, transport):
        return MeterInstance(self, config)


NORMAL_ONLY = NormalOnly()
METER = Meter()
'''


@pytest.fixture
def addon(tmp_path, monkeypatch):
    """The add-on installed the way pip would: a module and a dist-info with its entry points."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "zw_spi_addon.py").write_text(textwrap.dedent(ADDON))
    dist = site / "zw_spi_addon-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: zw-spi-addon\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[zarniwoop.protocols]\nspi-normal = zw_spi_addon:NORMAL_ONLY\nspi-meter = zw_spi_addon:METER\n"
    )
    monkeypatch.syspath_prepend(str(site))
    load_protocols.cache_clear()
    yield
    load_protocols.cache_clear()
    sys.modules.pop("zw_spi_addon", None)


@pytest.fixture
def config(tmp_path, monkeypatch, emulator, addon):
    monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path / "home"))
    settings = {
        **only(),
        **endpoint("normal", "spi-normal", f"{emulator.url}/normal"),
        **endpoint("out", "spi-meter", "", state="EXHAUSTED", status="0 of 100 calls left today"),
        **endpoint("cool", "spi-meter", "", state="COOLDOWN", status="paused by the provider until 14:00"),
        **endpoint("ok", "spi-meter", "", status="312 of 1000 calls left"),
        "research.default.code": "out",
        "research.fallback.code": "cool,normal,ok",
    }
    path = tmp_path / "zarniwoop.yaml"
    path.write_text(yaml.safe_dump({"settings": settings}))
    return path


def cli(config, *args):
    result = CliRunner().invoke(app, ["--config", str(config), *args])
    return result.exit_code, result.stdout, result.stderr


def test_exhausted_and_cooling_instances_are_skipped_with_their_status(config, emulator):
    emulator.add("/normal/s", Reply.json({}))
    code, out, err = cli(config, "search", "parser combinators", "-m", "code", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert [(a["providerInstanceId"], a["outcome"], a.get("errorMessage")) for a in data["attempts"]] == [
        ("out", "skipped_exhausted", "quota exhausted (reported by the instance: 0 of 100 calls left today)"),
        (
            "cool",
            "skipped_cooldown",
            "cooling down (reported by the instance: paused by the provider until 14:00)",
        ),
        ("normal", "success", None),
    ]
    assert data["providerInstanceId"] == "normal"


def test_a_normal_only_protocol_is_not_called_for_expert(config, emulator):
    emulator.add("/normal/s", Reply.json({}))
    code, out, _ = cli(
        config,
        "search",
        "parser combinators",
        "-m",
        "code",
        "--tier",
        "expert",
        "--provider",
        "normal",
        "--json",
    )
    data = json.loads(out)
    assert [(a["providerInstanceId"], a["outcome"], a["errorMessage"]) for a in data["attempts"]] == [
        ("normal", "skipped_unsupported", "does not support the EXPERT tier")
    ]
    assert data["hits"] == [] and code == 3
    assert emulator.requests("/normal/s") == []
    # Without the pin, the EXPERT cascade passes it over and the metered instance that is READY answers.
    code, out, _ = cli(config, "search", "parser combinators", "-m", "code", "--tier", "expert", "--json")
    data = json.loads(out)
    assert [(a["providerInstanceId"], a["outcome"]) for a in data["attempts"]] == [
        ("out", "skipped_exhausted"),
        ("cool", "skipped_cooldown"),
        ("normal", "skipped_unsupported"),
        ("ok", "success"),
    ]


def test_providers_json_shows_availability_status_text_tiers_and_domains(config):
    code, out, err = cli(config, "providers", "--json")
    assert code == 0, err
    entries = {e["id"]: e for e in json.loads(out)["providers"]}
    shown = {
        i: (e["availability"], e["statusText"], e["tiers"], e["domains"])
        for i, e in entries.items()
        if e["protocol"].startswith("spi-")
    }
    assert shown == {
        "normal": ("READY", None, ["NORMAL"], ["CODE"]),
        "out": ("EXHAUSTED", "0 of 100 calls left today", ["EXPERT", "NORMAL"], ["CODE", "TECH"]),
        "cool": ("COOLDOWN", "paused by the provider until 14:00", ["EXPERT", "NORMAL"], ["CODE", "TECH"]),
        "ok": ("READY", "312 of 1000 calls left", ["EXPERT", "NORMAL"], ["CODE", "TECH"]),
    }
    _, out, _ = cli(config, "routing", "--json")
    view = json.loads(out)
    assert [(s["id"], s["gate"], s["selected"]) for s in view["searchCascades"]["CODE"]] == [
        ("out", "skipped_exhausted", False),
        ("cool", "skipped_cooldown", False),
        ("normal", "ready", True),
        ("ok", "ready", False),
    ]
    assert {r["id"]: r["statusText"] for r in view["search"]}["ok"] == "312 of 1000 calls left"
    # research_providers' text, which a model reads, carries the status line under the instance.
    text = render_providers([entries["out"]])
    assert text.splitlines()[1] == "    status: 0 of 100 calls left today"

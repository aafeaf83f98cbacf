"""Protocols are discovered through the `zarniwoop.protocols` entry-point group, add-ons included."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import zarniwoop.protocols
from zarniwoop.contract import ConfigError, Modality, SearchProtocol, Tier
from zarniwoop.contract.protocol import protocol_tiers
from zarniwoop.protocols import checked_protocols, load_protocols, protocol_problem, refused_protocols
from zarniwoop.surfaces.cli import app

from ..support.runtime import write_config


def test_builtins_are_registered():
    protocols = load_protocols()
    assert {"wikipedia", "openalex"} <= set(protocols)
    for protocol_id, protocol in protocols.items():
        assert isinstance(protocol, SearchProtocol), protocol_id
        assert protocol.id == protocol_id
        assert protocol.prompt_hint.strip()
        assert protocol.modalities


ADDON = """
from zarniwoop.contract import Modality, Tier, RequestSpec, SearchPage

class Demo:
    id = "{id}"
    display_name = "Demo"
    modalities = frozenset({{{modalities}}})
    tiers = frozenset({{Tier.NORMAL}})
    key_required = False
    prompt_hint = "Demo add-on."

    def build_request(self, request, config):
        return RequestSpec("GET", (config.base_url or "") + "/s", params=(("q", request.query),))

    def parse_response(self, raw, spec, request):
        return SearchPage()

PROTOCOL = Demo()
"""


def install_addon(tmp_path, monkeypatch, protocol_id: str, modalities: str) -> None:
    """A tiny installed add-on distribution: a module plus dist-info with an entry point."""
    module = f"zw_addon_{protocol_id}"
    (tmp_path / f"{module}.py").write_text(ADDON.format(id=protocol_id, modalities=modalities))
    dist = tmp_path / f"{module}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[zarniwoop.protocols]\n{protocol_id} = {module}:PROTOCOL\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    load_protocols.cache_clear()


@pytest.fixture
def addon_on_path(tmp_path, monkeypatch):
    install_addon(tmp_path, monkeypatch, "demo", "Modality.CODE")
    yield
    load_protocols.cache_clear()
    sys.modules.pop("zw_addon_demo", None)


@pytest.fixture
def podcast_addon(tmp_path, monkeypatch):
    install_addon(tmp_path, monkeypatch, "pod", '"PODCAST", Modality.WEB')
    yield
    load_protocols.cache_clear()
    sys.modules.pop("zw_addon_pod", None)


POD_REFUSED = (
    "protocol 'pod' declares unknown modality 'PODCAST'; known: WEB, IMAGE, VIDEO, PDF, NEWS, ACADEMIC, "
    "ENCYCLOPEDIA, BOOK, MAP, CODE, INTERNAL_DOC, RAG"
)


def test_an_addon_declaring_an_unknown_modality_is_refused_naming_it(podcast_addon, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="zarniwoop.protocols"):
        protocols = load_protocols()
    assert "pod" not in protocols and "wikipedia" in protocols
    assert refused_protocols() == {"pod": POD_REFUSED}
    assert f"protocol entry point pod refused: {POD_REFUSED}" in [r.getMessage() for r in caplog.records]
    # An endpoint naming it is a start-up config error (exit 2) that says why, never a traceback.
    config = write_config(tmp_path, {"settings": {"research.endpoint.pod.protocol": "pod"}})
    result = CliRunner().invoke(
        app, ["--config", str(config), "providers"], env={"ZARNIWOOP_HOME": str(tmp_path / "h")}
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: config error: research.endpoint.pod.protocol: {POD_REFUSED} (the add-on was refused at start-up)"
    )
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("modalities", "problem"),
    [
        (frozenset({"web"}), "protocol 'demo' declares modality 'web' as text; declare Modality.WEB"),
        (frozenset(), "protocol 'demo': `modalities` must be a non-empty set of Modality"),
    ],
)
def test_protocols_handed_in_by_code_are_checked_alike(modalities, problem):
    demo = type("Demo", (), {"id": "demo", "modalities": modalities, "tiers": frozenset({Tier.NORMAL})})()
    assert protocol_problem(demo) == problem
    with pytest.raises(ConfigError) as caught:
        checked_protocols({"demo": demo})
    assert caught.value.message == f"config error: protocols.demo: {problem}"


def test_a_protocol_that_declares_no_tiers_serves_every_tier():
    demo = type("Demo", (), {"id": "demo", "modalities": frozenset({Modality.WEB})})()
    assert protocol_problem(demo) is None
    assert protocol_tiers(demo) == frozenset({Tier.NORMAL, Tier.EXPERT})
    # Every built-in serves both: none needs to say so.
    assert {protocol_tiers(p) for p in load_protocols().values()} == {frozenset({Tier.NORMAL, Tier.EXPERT})}


def test_declared_tiers_are_still_checked_and_kept():
    normal = type(
        "Demo", (), {"id": "demo", "modalities": frozenset({Modality.WEB}), "tiers": {Tier.NORMAL}}
    )()
    assert protocol_problem(normal) is None
    assert protocol_tiers(normal) == frozenset({Tier.NORMAL})
    texted = type("Demo", (), {"id": "demo", "modalities": frozenset({Modality.WEB}), "tiers": {"expert"}})()
    assert protocol_problem(texted) == "protocol 'demo' declares tier 'expert' as text; declare Tier.EXPERT"
    empty = type("Demo", (), {"id": "demo", "modalities": frozenset({Modality.WEB}), "tiers": frozenset()})()
    assert protocol_problem(empty) == "protocol 'demo': `tiers` must be a non-empty set of Tier"


def test_an_addon_registers_without_changing_zarniwoop(addon_on_path):
    protocols = load_protocols()
    assert protocols["demo"].display_name == "Demo"
    assert "wikipedia" in protocols


def test_protocol_modules_read_no_clock():
    """Pure means pure: "today" arrives as `SearchRequest.today`, set from the dispatcher's clock."""
    folder = Path(zarniwoop.protocols.__file__).parent
    clock_read = re.compile(r"\b(datetime\.now|datetime\.utcnow|date\.today|time\.time|time\.monotonic)\(")
    readers = [
        p.name for p in sorted(folder.glob("*.py")) if clock_read.search(p.read_text(encoding="utf-8"))
    ]
    assert readers == []

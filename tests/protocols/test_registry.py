"""Protocols are discovered through the `zarniwoop.protocols` entry-point group, add-ons included."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

import zarniwoop.protocols
from zarniwoop.contract import SearchProtocol
from zarniwoop.protocols import load_protocols


def test_builtins_are_registered():
    protocols = load_protocols()
    assert {"wikipedia", "openalex"} <= set(protocols)
    for protocol_id, protocol in protocols.items():
        assert isinstance(protocol, SearchProtocol), protocol_id
        assert protocol.id == protocol_id
        assert protocol.prompt_hint.strip()
        assert protocol.modalities


@pytest.fixture
def addon_on_path(tmp_path, monkeypatch):
    """A tiny installed add-on distribution: a module plus dist-info with an entry point."""
    (tmp_path / "zw_addon_demo.py").write_text(
        textwrap.dedent(
            """
            from zarniwoop.contract import Modality, Tier, RequestSpec, SearchPage

            class Demo:
                id = "demo"
                display_name = "Demo"
                modalities = frozenset({Modality.CODE})
                tiers = frozenset({Tier.NORMAL})
                key_required = False
                prompt_hint = "Demo add-on."

                def build_request(self, request, config):
                    return RequestSpec("GET", (config.base_url or "") + "/s", params=(("q", request.query),))

                def parse_response(self, raw, spec, request):
                    return SearchPage()

            PROTOCOL = Demo()
            """
        )
    )
    dist = tmp_path / "zw_addon_demo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: zw-addon-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[zarniwoop.protocols]\ndemo = zw_addon_demo:PROTOCOL\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    load_protocols.cache_clear()
    yield
    load_protocols.cache_clear()
    sys.modules.pop("zw_addon_demo", None)


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

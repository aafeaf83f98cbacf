"""The charting library vendored into the web UI: its licence beside it, the version and hashes that
docs/console.md states, served by `/ui/` under the strict CSP, and nothing in it that would need a
looser one."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from zarniwoop.surfaces.http import create_app
from zarniwoop.surfaces.http.routes.web import SECURITY_HEADERS, ui_assets

from ..support.runtime import only, write_config

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "src" / "zarniwoop" / "surfaces" / "http" / "web" / "vendor" / "uplot"
DOC = ROOT / "docs" / "console.md"
ROW = re.compile(
    r"^\| uPlot \| (?P<version>\d+\.\d+\.\d+) \| MIT \(`vendor/uplot/LICENSE`\) \| npm, `npm pack uplot@(?P<pinned>[\d.]+)`",
    re.M,
)


def documented() -> tuple[str, dict[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    row = ROW.search(text)
    assert row, "docs/console.md lost its row for uPlot in 'Vendored libraries'"
    assert row["version"] == row["pinned"]
    hashes = dict(re.findall(r"`(uPlot\.[a-z.]+)` ([0-9a-f]{64})", text))
    return row["version"], hashes


def test_the_licence_is_beside_the_library_and_the_version_is_the_documented_one():
    version, hashes = documented()
    licence = (VENDOR / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("The MIT License (MIT)") and "Leon Sorokin" in licence
    head = (VENDOR / "uPlot.esm.js").read_text(encoding="utf-8")[:400]
    assert f"https://github.com/leeoniya/uPlot (v{version})" in head
    assert set(hashes) == {"uPlot.esm.js", "uPlot.min.css"}
    for name, digest in hashes.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, (
            f"{name} is not the documented file"
        )
    assert sorted(p.name for p in VENDOR.iterdir()) == ["LICENSE", "uPlot.esm.js", "uPlot.min.css"]


def test_the_package_data_globs_ship_the_library_and_its_licence():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for glob in ("surfaces/http/web/**/*.js", "surfaces/http/web/**/*.css", "surfaces/http/web/**/LICENSE*"):
        assert f'"{glob}"' in pyproject


def test_nothing_in_it_needs_a_looser_csp():
    code = (VENDOR / "uPlot.esm.js").read_text(encoding="utf-8")
    for needs_unsafe in (
        'createElement("style")',
        "createElement('style')",
        'setAttribute("style"',
        "innerHTML",
        "eval(",
        "new Function",
        "insertRule",
        "cssText",
    ):
        assert needs_unsafe not in code, needs_unsafe
    assert "export { uPlot as default };" in code  # the ESM build: pages/usage.js imports it


@pytest.fixture
def client(tmp_path):
    config = write_config(tmp_path, {"settings": only()})
    with TestClient(create_app(config=config, home=tmp_path / "home")) as http:
        yield http


def test_served_from_ui_with_the_csp_and_linked_by_the_page(client):
    assert {
        "vendor/uplot/uPlot.esm.js",
        "vendor/uplot/uPlot.min.css",
        "pages/usage.js",
        "pages/usage.css",
    } <= set(ui_assets())
    for path, media in (("uPlot.esm.js", "text/javascript"), ("uPlot.min.css", "text/css")):
        answer = client.get(f"/ui/vendor/uplot/{path}")
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith(media)
        assert answer.headers["content-security-policy"] == SECURITY_HEADERS["Content-Security-Policy"]
        assert answer.content == (VENDOR / path).read_bytes()
    assert client.get("/ui/vendor/uplot/LICENSE").status_code == 404  # shipped, not served
    page = client.get("/").text
    assert '<link rel="stylesheet" href="/ui/vendor/uplot/uPlot.min.css">' in page
    assert 'import uPlot from "../vendor/uplot/uPlot.esm.js";' in client.get("/ui/pages/usage.js").text
    assert "script-src 'self'; style-src 'self';" in SECURITY_HEADERS["Content-Security-Policy"]

"""The web UI's files as the HTTP app serves them (no browser): headers, contents, the form's vocabulary.

The browser tests (`test_web_browser.py`) drive the same page in Chromium; these run everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient

from zarniwoop.contract.enums import Modality
from zarniwoop.contract.query import MAX_RESULTS_LIMIT
from zarniwoop.research.verdicts import MAX_DEPTH
from zarniwoop.surfaces.http import create_app
from zarniwoop.surfaces.http.routes.web import asset_bytes, ui_assets

from ..support.runtime import only, write_config


@pytest.fixture
def client(tmp_path) -> Iterator[TestClient]:
    config = write_config(tmp_path, {"settings": only()})
    with TestClient(create_app(config=config, home=tmp_path / "home")) as http:
        yield http


class _Form(HTMLParser):
    """Collects the controls of the page: `<select>` options and `<input>` attributes by id."""

    def __init__(self) -> None:
        super().__init__()
        self.options: dict[str, list[str]] = {}
        self.inputs: dict[str, dict[str, str | None]] = {}
        self.labels: set[str] = set()
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "select":
            self._select = a["id"]
            self.options[a["id"] or ""] = []
        elif tag == "option" and self._select:
            self.options[self._select].append(a["value"] or "")
        elif tag in ("input", "textarea"):
            self.inputs[a["id"] or ""] = a
        elif tag == "label" and a.get("for"):
            self.labels.add(a["for"] or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None


def parsed_page() -> _Form:
    form = _Form()
    form.feed(asset_bytes("index.html").decode())
    return form


def test_the_page_needs_no_token_and_forbids_other_origins(client):
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp and "form-action 'none'" in csp
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert '<script type="module" src="/ui/app.js"></script>' in page.text
    script = client.get("/ui/app.js")
    styles = client.get("/ui/app.css")
    assert script.status_code == styles.status_code == 200
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert styles.headers["content-type"] == "text/css; charset=utf-8"
    assert script.content == asset_bytes("app.js") and 'from "./core.js"' in script.text
    core = client.get("/ui/core.js")
    assert core.status_code == 200 and "Authorization: `Bearer" in core.text
    assert client.get("/ui/pages/index.js").status_code == 200
    assert client.get("/ui/../routes/web.py").status_code == 404  # only the package's .js/.css files
    assert client.get("/ui/%2e%2e/routes/web.py").status_code == 404
    assert client.get("/ui/index.py").status_code == 404
    assert client.get("/ui/index.html").status_code == 404


def test_the_ui_is_not_part_of_the_api_schema(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert "/" not in paths and "/ui/app.js" not in paths
    assert client.get("/v1/_routing").status_code == 401  # the data stays behind the token


def test_nothing_is_loaded_from_another_origin():
    own = [name for name in ui_assets() if not name.startswith("vendor/")]
    assert {"app.js", "core.js", "app.css", "pages/index.js"} <= set(own)
    for name in ["index.html", *own]:
        text = asset_bytes(name).decode()
        # An absolute URL may appear only as text the page shows (none does), never as a source.
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), name
        assert not re.search(r"""@import|url\(\s*["']?(https?:)?//""", text), name
        # API data reaches the page as text only: no HTML parsing of strings, no code from strings.
        assert not re.search(r"\.(inner|outer)HTML\s*=|insertAdjacentHTML|document\.write|eval\(", text), name


def test_the_form_offers_every_modality_and_the_contracts_limits():
    form = parsed_page()
    offered = form.options["search-modality"]
    assert [o for o in offered if o != "rich"] == [m.value for m in Modality]
    assert offered[1] == "rich"  # WEB, IMAGE, VIDEO and NEWS at once (research_rich), after Web
    assert form.inputs["search-max"]["max"] == str(MAX_RESULTS_LIMIT)
    assert form.inputs["investigate-max"]["max"] == str(MAX_RESULTS_LIMIT)
    assert form.options["investigate-depth"] == [str(d) for d in range(MAX_DEPTH + 1)]
    # every control has a label, and the token field never shows what was typed
    controls = set(form.inputs) | set(form.options)
    assert controls <= form.labels, controls - form.labels
    assert form.inputs["token"]["type"] == "password" and form.inputs["token"]["autocomplete"] == "off"

"""`POST /v1/research/content` (the content store over HTTP): a URL through the SSRF guard, a
provider reference, the text for display, refusals naming the field, the project's workspace."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from zarniwoop.surfaces.http import create_app
from zarniwoop.surfaces.http.routes.content import MAX_TEXT_CHARS
from zarniwoop.tenancy.tokens import TokenStore

from ..support.cli import run_cli
from ..support.emulator import Reply
from ..support.providers_academic import add_pubmed
from ..support.runtime import only, write_config

PAGE = (
    b"<html><head><title>T</title><style>body{color:red}</style><script>alert('x')</script></head>"
    b"<body><h1>Aurora</h1><p>Light in the <em>polar</em> sky.</p><!-- hidden --></body></html>"
)


@dataclass
class Api:
    client: TestClient
    home: Path
    tokens: dict[str, str]

    def load(self, body: object, who: str = "user"):
        return self.client.post(
            "/v1/research/content", json=body, headers={"Authorization": f"Bearer {self.tokens[who]}"}
        )


def make_api(tmp_path: Path, settings: dict[str, object], tenants: dict[str, object] | None = None):
    config: dict[str, object] = {"settings": {**only("pubmed"), **settings}}
    if tenants:
        config["tenants"] = tenants
    home = tmp_path / "home"
    app = create_app(config=write_config(tmp_path, config), home=home)
    client = TestClient(app, raise_server_exceptions=False)
    return app, client, home


@pytest.fixture
def private_ok(tmp_path) -> Iterator[Api]:
    """The operator lets the content store reach private addresses (the loopback emulator)."""
    yield from _api(tmp_path, {"research.content.allowPrivate": True, "research.content.maxBytes": 200_000})


@pytest.fixture
def guarded(tmp_path) -> Iterator[Api]:
    yield from _api(tmp_path, {})  # (a tenant cannot lift the guard: allowPrivate is system-only)


def _api(tmp_path, settings, tenants=None) -> Iterator[Api]:
    app, client, home = make_api(tmp_path, settings, tenants)
    with client:
        store = TokenStore(app.state.zarniwoop.runtime.db)
        tokens = {
            "user": client.portal.call(store.create, "acme", "review", "user").token,  # type: ignore[union-attr]
            "other": client.portal.call(store.create, "acme", "other", "user").token,  # type: ignore[union-attr]
        }
        yield Api(client, home, tokens)


def test_a_page_is_saved_in_the_projects_workspace_and_answered_as_text(private_ok, emulator):
    emulator.add("/page", Reply(body=PAGE, headers={"Content-Type": "text/html; charset=utf-8"}))
    answer = private_ok.load({"url": f"{emulator.url}/page"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["text"] == "T Aurora Light in the polar sky."  # no script, style or comment
    assert body["mimeType"] == "text/html"
    assert body["bytes"] == len(PAGE) and body["truncated"] is False
    assert body["textChars"] == len(body["text"]) and body["textTruncated"] is False
    assert body["source"] == body["finalUrl"] == f"{emulator.url}/page"
    assert body["note"] is None and "path" not in body  # the server's file system stays its own
    saved = list((private_ok.home / "workspace" / "acme" / "review" / "content").iterdir())
    assert [p.read_bytes() for p in saved] == [PAGE]
    assert len(emulator.requests("/page")) == 1


def test_long_text_is_cut_for_display_and_a_body_at_max_bytes(private_ok, emulator):
    emulator.add("/long", Reply(body=b"ab " * 30_000, headers={"Content-Type": "text/plain"}))
    body = private_ok.load({"url": f"{emulator.url}/long"}).json()
    assert len(body["text"]) == MAX_TEXT_CHARS == 50_000
    assert body["textChars"] == 90_000 and body["textTruncated"] is True
    assert body["bytes"] == 90_000 and body["truncated"] is False
    emulator.add("/huge", Reply(body=b"z" * 300_000, headers={"Content-Type": "text/plain"}))
    huge = private_ok.load({"url": f"{emulator.url}/huge"}).json()
    assert huge["bytes"] == 200_000 and huge["truncated"] is True  # research.content.maxBytes


def test_a_pdf_is_saved_but_not_shown_as_text(private_ok, emulator):
    emulator.add("/paper.pdf", Reply(body=b"%PDF-1.4 \x00\x01", headers={"Content-Type": "application/pdf"}))
    body = private_ok.load({"url": f"{emulator.url}/paper.pdf"}).json()
    assert body["text"] is None and body["textChars"] == 0
    assert body["note"] == "application/pdf is not text; 11 bytes are saved in the project's workspace"


def test_a_private_address_is_refused_naming_the_url(guarded, emulator):
    emulator.add("/secret", Reply(body=b"internal"))
    answer = guarded.load({"url": f"{emulator.url}/secret"})
    assert answer.status_code == 422
    assert answer.json() == {
        "error": {
            "field": "url",
            "message": f"url: {emulator.url}/secret refused: 127.0.0.1 is a loopback address; content is"
            " only fetched from public addresses (set research.content.allowPrivate: true to allow"
            " private targets)",
        }
    }
    metadata = guarded.load({"url": "http://169.254.169.254/latest/meta-data/"})
    assert metadata.status_code == 422 and "169.254.169.254 is a link-local address" in metadata.text
    assert emulator.requests() == []
    assert not (guarded.home / "workspace" / "acme" / "review" / "content").exists()


def test_bad_bodies_name_the_field(guarded):
    cases = [
        ({}, "url", 'url: give exactly one of "url" or "ref" (PROVIDER:REF)'),
        ({"url": "https://a.example/", "ref": "pubmed:1"}, "url", None),
        ({"ref": "pubmed"}, "ref", "ref: expected PROVIDER:REF (e.g. pubmed:11748933), got 'pubmed'"),
        ({"link": "https://a.example/"}, "link", None),
    ]
    for body, field, message in cases:
        answer = guarded.load(body)
        assert answer.status_code == 422, (body, answer.text)
        error = answer.json()["error"]
        assert error["field"] == field, (body, error)
        if message:
            assert error["message"] == message
    unknown = guarded.load({"ref": "nosuch:1"})  # well-formed, naming no provider here: 404
    assert unknown.status_code == 404 and unknown.json()["error"]["field"] == "provider"
    assert "known:" in unknown.json()["error"]["message"]


MALFORMED = ("http://[::1", "http://a.example:99999/", "https://a.example:port/")
UNPARSABLE = "url: is not a valid URL (an unclosed [ or a bad port); expected http(s)://host[:port]/path"


def test_a_malformed_url_is_a_422_naming_url_and_exit_2_in_the_cli(guarded):
    """Not a 500 with a traceback (issue 46): the fetcher's proxy lookup could not split it."""
    for url in MALFORMED:
        answer = guarded.load({"url": url})
        assert answer.status_code == 422, (url, answer.text)
        assert answer.json()["error"] == {"field": "url", "message": UNPARSABLE}
    for url in MALFORMED:
        ran = run_cli("fetch-content", url, home=guarded.home.parent / "cli-home")
        assert (ran.code, ran.stderr.strip()) == (2, f"error: {UNPARSABLE}"), url


def test_an_upstream_failure_is_a_502_naming_the_url(private_ok, emulator):
    emulator.add("/gone", Reply(status=404))
    answer = private_ok.load({"url": f"{emulator.url}/gone"})
    assert answer.status_code == 502
    assert answer.json() == {
        "error": {"field": "url", "message": "could not load the content: HTTP 404 from 127.0.0.1"}
    }


def test_a_token_is_needed_and_each_project_has_its_own_workspace(private_ok, emulator):
    emulator.add("/page", Reply(body=b"hello", headers={"Content-Type": "text/plain"}))
    no_token = private_ok.client.post("/v1/research/content", json={"url": f"{emulator.url}/page"})
    assert no_token.status_code == 401
    assert private_ok.load({"url": f"{emulator.url}/page"}, who="other").json()["text"] == "hello"
    workspace = private_ok.home / "workspace" / "acme"
    assert [p.name for p in workspace.iterdir()] == ["other"]


def test_a_pubmed_reference_is_loaded_through_its_provider(tmp_path, emulator):
    base = add_pubmed(emulator)  # the recorded NCBI bodies (skips without ../shared)
    gen = _api(tmp_path, {"research.endpoint.pubmed.baseUrl": base})
    api = next(gen)
    try:
        answer = api.load({"ref": "pubmed:11748933"})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["provider"] == "pubmed" and body["source"] == "pubmed:11748933"
        assert body["mimeType"] == "text/plain"
        assert body["text"].startswith("Is cryopreservation a homogeneous process?")
        assert emulator.requests("/pubmed/efetch.fcgi")[0].param("id") == "11748933"
    finally:
        gen.close()


def test_the_route_is_in_the_openapi_schema(guarded):
    spec = guarded.client.get("/openapi.json").json()
    operation = spec["paths"]["/v1/research/content"]["post"]
    assert operation["operationId"] == "research_content"
    props = spec["components"]["schemas"]["LoadedText"]["properties"]
    assert list(props) == [
        "source", "provider", "mimeType", "bytes", "truncated", "sha256", "finalUrl", "redirects",
        "text", "textChars", "textTruncated", "note",
    ]  # fmt: skip
    assert set(spec["components"]["schemas"]["ContentRequest"]["properties"]) == {"url", "ref"}

"""The consent page follows only the redirect URI it showed (issue 45), in headless Chromium against
a real `zarniwoop serve --auth oauth` with the built-in authorization server.

The server never answers with another URI (test_oauth_retention.py), so to see the page's own
check the test answers the consent's POST itself with a `javascript:` URI: the page must refuse it,
say so, and stay. Unintercepted, an approval sends the browser to the registered URI with a code.
The browser comes from test_web_browser.py (skipped with it where Chromium or Playwright is absent).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import urlparse

import httpx
import pytest

from ..support.cli import run_cli
from ..support.runtime import write_config
from ..support.served import Served, served
from . import test_web_browser as web
from .test_oauth_builtin import free_port

pytestmark = pytest.mark.xdist_group(__name__)
browser = web.browser
expect = web.expect
REDIRECT = "http://127.0.0.1:9/callback"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("consent")
    port = free_port()
    config = write_config(
        directory,
        {
            "auth": {"mode": "oauth", "resource": f"http://127.0.0.1:{port}", "builtin": True},
            "tenants": {"acme": {"projects": {"review": {}}}},
        },
    )
    home = directory / "home"
    created = run_cli(
        "--config", str(config), "--tenant", "acme", "tokens", "create", "--role", "tenant-admin", "--json", home=home
    )  # fmt: skip
    assert created.code == 0, created.stderr
    with served(config, home, "--port", str(port), "--auth", "oauth") as running:
        running.token = json.loads(created.stdout)["token"]
        yield running


def consent_url(server: Served) -> str:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        registered = http.post(
            "/register", json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
        )
        query = {
            "response_type": "code",
            "client_id": registered.json()["client_id"],
            "redirect_uri": REDIRECT,
            "code_challenge": "c" * 43,
            "code_challenge_method": "S256",
            "state": "s",
        }
        sent = http.get("/authorize", params=query)
    assert sent.status_code == 302, sent.text
    return sent.headers["location"]


@pytest.fixture
def tab(browser) -> Iterator[object]:
    page = browser.new_page()
    try:
        yield page
    finally:
        page.close()


def test_an_answer_naming_another_uri_is_not_followed(server, tab):
    def forged(route) -> None:  # what a tampered or buggy server could say
        if route.request.method == "POST":
            route.fulfill(status=200, content_type="application/json", body=json.dumps({"redirect": "javascript:document.title='pwned'"}))  # fmt: skip
        else:
            route.continue_()

    tab.route("**/v1/oauth/requests/*", forged)
    consent = consent_url(server)
    tab.goto(consent)
    tab.locator("#token").fill(server.token)  # pasted after the page loaded: it asks for the request then
    tab.locator("#project").fill("review")
    tab.locator("#approve").click()
    expect(tab.locator("#error")).to_contain_text("did not register")
    assert tab.title() == "Zarniwoop · grant access" and tab.url == consent


def test_an_approval_goes_back_to_the_registered_uri_with_a_code(server, tab):
    tab.goto(consent_url(server))
    tab.locator("#token").fill(server.token)
    tab.locator("#project").fill("review")
    with tab.expect_request(lambda request: request.url.startswith(REDIRECT)) as sent:
        tab.locator("#approve").click()
    back = urlparse(sent.value.url)
    assert f"{back.scheme}://{back.netloc}{back.path}" == REDIRECT and "code=" in back.query


def test_the_sign_ins_page_lists_a_grant_and_revokes_it(server, tab):
    import base64
    import hashlib
    from urllib.parse import parse_qs

    verifier = "v" * 64
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    admin = {"Authorization": f"Bearer {server.token}"}
    with httpx.Client(base_url=server.url, timeout=60) as http:  # a client signs in, approved over HTTP
        client_id = http.post(
            "/register",
            json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "client_name": "ide"},
        ).json()["client_id"]
        query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
                 "code_challenge": challenge, "code_challenge_method": "S256"}  # fmt: skip
        request_id = parse_qs(urlparse(http.get("/authorize", params=query).headers["location"]).query)[
            "request"
        ][0]
        redirect = http.post(
            f"/v1/oauth/requests/{request_id}", json={"project": "review"}, headers=admin
        ).json()
        code = parse_qs(urlparse(redirect["redirect"]).query)["code"][0]
        exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                    "client_id": client_id, "code_verifier": verifier}  # fmt: skip
        refresh = http.post("/token", data=exchange).json()["refresh_token"]

    tab.goto(server.url + "/")
    expect(tab.locator("body[data-ready=true]")).to_have_count(1)
    web.sign_in(tab, server.token)
    tab.locator("a[data-page=grants]").click()
    row = tab.locator(f"#grants-view tr:has(code:text-is('{client_id}'))")
    expect(row).to_contain_text("review")
    row.get_by_role("button", name=f"Revoke the grant of {client_id}").click()
    tab.locator("#grants-confirm button.danger").click()
    expect(tab.locator("#grants-status")).to_contain_text(f"Revoked the grant of {client_id}")
    expect(tab.locator("#grants-view")).to_contain_text("No client holds a grant in this tenant.")
    with httpx.Client(base_url=server.url, timeout=60) as http:
        again = {"grant_type": "refresh_token", "refresh_token": refresh, "client_id": client_id}
        assert http.post("/token", data=again).json()["error"] == "invalid_grant"

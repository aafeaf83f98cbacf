"""The console's Credentials and Models pages in headless Chromium against a real `zarniwoop serve`
(issue 14), through the UI only: a credential set, rotated and deleted — its value never in the
DOM, in any response the tab received, nor in the SQLite file, and the next LLM call (the gateway,
upstream the loopback emulator) sending the rotated key —, and the catalog's Refresh and "Discover
AI Models" buttons showing the counters their endpoints answered.

The browser, the tab and the sign-in come from test_web_browser.py (its module skips, and so this
one, where Debian's chromium or Playwright is absent).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..support.emulator import Emulator, Reply
from ..support.gateway import openai_completion
from ..support.llm import trusting
from ..support.runtime import only, write_config
from ..support.served import Served, served
from ..support.site import Site, make_token
from . import test_web_browser as web

# its module-scoped server is set up once: the module's tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)

# The browser and a fresh signed-out tab per test (`tab`: test_web_browser's `page`, against this
# module's `server`); assigned, not imported, so each is a fixture of this module under its name here.
browser = web.browser
tab = web.page
sign_in = web.sign_in
expect = web.expect

OLD_KEY = "sk-ui-OLD-7c41e09b5a2d"
NEW_KEY = "sk-ui-NEW-3f88d62c0e17"
LAB_MODELS = ["qwen3:30b", "llama3.2:3b", "gemma3:12b"]
CHAT = {"model": "openai:gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


def ollama_tags(names: list[str]) -> dict:
    return {
        "models": [
            {"name": n, "model": n, "modified_at": "2026-11-30T10:00:00Z", "size": 1, "digest": "d"}
            for n in names
        ]
    }


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    directory = tmp_path_factory.mktemp("web-console-admin")
    emulator = Emulator().start()
    emulator.add("/v1/chat/completions", openai_completion("hello from upstream", 12, 3))
    emulator.add("/lab/api/tags", Reply.json(ollama_tags(LAB_MODELS)))
    emulator.add("/locked/v1/models", Reply.json({"error": {"message": "bad key"}}, status=401))
    tenants = {
        "acme": {
            "settings": {"ai.provider.openai.baseUrl": emulator.url + "/v1"},
            "accounts": {
                "mike": {
                    "llm": {
                        "providers": [
                            {"provider": "openai", "model": "gpt-4o-mini", "api_key_ref": "cred_mike_openai"}
                        ]
                    }
                }
            },
            "projects": {
                "ui": {
                    "settings": {
                        "ai.provider.lab.type": "ollama",
                        "ai.provider.lab.baseUrl": emulator.url + "/lab",
                        "ai.provider.locked.type": "openai",
                        "ai.provider.locked.baseUrl": emulator.url + "/locked/v1",
                        "ai.provider.locked.apiKey": "sk-locked-wrong",
                    }
                }
            },
        }
    }
    config = write_config(directory, {"settings": trusting(only()), "tenants": tenants})
    try:
        yield Site(config, directory / "home", emulator)
    finally:
        emulator.stop()


@pytest.fixture(scope="module")
def server(site) -> Iterator[Served]:
    with served(site.config, site.home) as running:
        assert running.token is not None  # the printed operator token
        yield running


@pytest.fixture(scope="module")
def mike(site, server) -> str:
    """A user token of acme/ui bound to account mike (the gateway's caller), made while serving."""
    return str(make_token(site, "acme", "ui", "--account", "mike")["token"])


def ask_llm(server: Served, token: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        json=CHAT,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )


def sent_keys(site: Site) -> list[str | None]:
    return [r.header("authorization") for r in site.emulator.requests("/v1/chat/completions")]


def database_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.glob("*.db*")))


def assert_nowhere_in_the_page(tab, *secrets: str) -> None:
    html = tab.content()
    values = tab.evaluate("[...document.querySelectorAll('input, textarea')].map((i) => i.value).join('\\n')")
    text = tab.evaluate("document.body.innerText")
    for secret in secrets:
        for where, found in (("DOM", html), ("input values", values), ("text", text)):
            assert secret not in found and secret[:10] not in found, (secret, where)


def credential_rows(tab) -> list[list[str]]:
    rows = tab.locator("table.credentials-list tbody tr")
    return [
        [c.strip() for c in rows.nth(i).locator("th, td").all_inner_texts()[:5]] for i in range(rows.count())
    ]


def test_a_credential_is_set_rotated_and_deleted_and_its_value_is_never_shown(tab, server, site, mike):
    responses = []
    tab.on("response", lambda response: responses.append(response))
    sign_in(tab, server.token, tenant="acme", project="ui")
    tab.locator("#nav a[data-page=credentials]").click()
    expect(tab.locator("#credentials-view")).to_contain_text("No credentials are stored for this tenant.")
    # the name field suggests what the tenant looks up: mike's api_key_ref, keyed search endpoints
    suggested = tab.eval_on_selector_all(
        "#credentials-names option", "os => os.map((o) => [o.value, o.textContent])"
    )
    assert ["cred_mike_openai", "account mike → openai:gpt-4o-mini"] in suggested
    assert ["SERPER_API_KEY", "search endpoint serper (serper)"] in suggested

    form = tab.locator("#credentials-form")
    form.get_by_label("Stored for").select_option("account")
    form.get_by_label("Account name").fill("mike")
    form.get_by_label("Credential name").fill("cred_mike_openai")
    value = form.get_by_label("Credential value")
    assert value.get_attribute("type") == "password"
    value.fill(OLD_KEY)
    form.get_by_role("button", name="Save").click()
    expect(tab.locator("#credentials-status")).to_have_text(
        "Stored cred_mike_openai for account mike of tenant acme."
    )
    expect(value).to_have_value("")
    assert credential_rows(tab) == [["cred_mike_openai", "acme", "account", "mike", "set"]]
    used_by = tab.locator("table.credentials-list tbody tr td").nth(6)
    expect(used_by).to_have_text("account mike → openai:gpt-4o-mini")
    assert_nowhere_in_the_page(tab, OLD_KEY)

    assert ask_llm(server, mike).status_code == 200
    assert sent_keys(site) == [f"Bearer {OLD_KEY}"]

    tab.get_by_role("button", name="Rotate cred_mike_openai of account mike").click()
    expect(value).to_be_focused()
    expect(form.get_by_label("Credential name")).to_have_value("cred_mike_openai")
    value.fill(NEW_KEY)
    form.get_by_role("button", name="Save").click()
    expect(tab.locator("#credentials-status")).to_have_text(
        "Rotated cred_mike_openai for account mike of tenant acme."
    )
    expect(value).to_have_value("")
    assert credential_rows(tab) == [["cred_mike_openai", "acme", "account", "mike", "set"]]
    assert_nowhere_in_the_page(tab, OLD_KEY, NEW_KEY)

    assert ask_llm(server, mike).status_code == 200
    assert sent_keys(site) == [f"Bearer {OLD_KEY}", f"Bearer {NEW_KEY}"]  # the rotated key, at once

    delete = tab.get_by_role("button", name="Delete cred_mike_openai of account mike")
    delete.click()
    confirm = tab.locator("#credentials-confirm")
    expect(confirm).to_contain_text("Delete cred_mike_openai of account mike? The value cannot be recovered")
    confirm.get_by_role("button", name="Cancel").click()  # nothing happens without the confirmation
    expect(tab.locator("#credentials-status")).to_have_text("Nothing deleted.")
    expect(delete).to_be_focused()
    assert len(credential_rows(tab)) == 1
    delete.click()
    confirm.get_by_role("button", name="Delete cred_mike_openai").click()
    expect(tab.locator("#credentials-status")).to_have_text("Deleted cred_mike_openai of account mike.")
    expect(tab.locator("#credentials-view")).to_contain_text("No credentials are stored for this tenant.")

    refused = ask_llm(server, mike)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "missing_credential"
    assert len(sent_keys(site)) == 2

    api_bodies = []
    for response in responses:
        if "/v1/" in response.url:
            try:
                api_bodies.append(response.body())
            except Exception:  # a body the browser did not keep (none of the /v1 answers here)
                api_bodies.append(b"")
    assert len(api_bodies) >= 6  # GET, PUT, GET, PUT, GET, DELETE, GET and the routing calls
    db = database_bytes(site.home)
    assert b"cred_mike_openai" in db  # the right file: the audit keeps the name (never the value)
    for secret in (OLD_KEY, NEW_KEY):
        assert not [b for b in api_bodies if secret[:10].encode() in b]
        assert secret[:10].encode() not in db
    assert_nowhere_in_the_page(tab, OLD_KEY, NEW_KEY)


def test_a_bad_credential_is_refused_with_the_field_marked(tab, server):
    sign_in(tab, server.token, tenant="acme", project="ui")
    tab.locator("#nav a[data-page=credentials]").click()
    form = tab.locator("#credentials-form")
    form.get_by_label("Stored for").select_option("account")
    form.get_by_label("Credential name").fill("cred_x")
    form.get_by_label("Credential value").fill("sk-never-stored-0001")
    form.get_by_role("button", name="Save").click()
    expect(tab.locator("#credentials-error")).to_have_text(
        "account: an account-level credential needs the account name"
    )
    expect(form.get_by_label("Account name")).to_have_attribute("aria-invalid", "true")
    expect(form.get_by_label("Account name")).to_be_focused()
    expect(form.get_by_label("Credential value")).to_have_value("")  # emptied when sent, even when refused
    expect(tab.locator("#credentials-view")).to_contain_text("No credentials are stored")


def ms(value: float) -> str:
    """A duration as the page's JavaScript prints a number (31.0 → "31")."""
    return str(int(value)) if float(value).is_integer() else str(value)


def counters_of_refresh(r: dict) -> str:
    return (
        f"Catalog refreshed: {r['documentsLoaded']} documents loaded — {r['bundledModelsLoaded']} bundled "
        f"models of {r['bundledProvidersLoaded']} bundled providers, {r['overrideScopes']} "
        f"scope{'' if r['overrideScopes'] == 1 else 's'} with documents, {len(r['skipped'])} documents "
        f"skipped — in {ms(r['durationMs'])} ms."
    )


def test_refresh_and_discover_show_the_counters_their_endpoints_return(tab, server, site):
    sign_in(tab, server.token, tenant="acme", project="ui")
    tab.locator("#nav a[data-page=models]").click()
    expect(tab.locator("table.models").first).to_be_visible()
    expect(tab.locator("#models-status")).to_have_text("54 models of 7 instances in acme/ui.")
    expect(tab.locator("details.layers ol li")).to_have_text(
        [
            "bundled (package data)",
            "system auto: _system/_tenant auto",
            "system manual: _system/_tenant manual",
            "tenant auto: acme/_tenant auto",
            "tenant manual: acme/_tenant manual",
            "project auto: acme/ui auto",
            "project manual: acme/ui manual",
        ]
    )

    with tab.expect_response(lambda r: r.url.startswith(f"{server.url}/v1/admin/ai-models/refresh")) as info:
        tab.get_by_role("button", name="Refresh catalog").click()
    refreshed = info.value.json()
    assert (refreshed["bundledModelsLoaded"], refreshed["bundledProvidersLoaded"]) == (54, 7)
    assert (refreshed["documentsLoaded"], refreshed["overrideScopes"], refreshed["skipped"]) == (108, 1, [])
    expect(tab.locator("#models-status")).to_have_text(counters_of_refresh(refreshed))
    assert "Catalog refreshed: 108 documents loaded — 54 bundled models of 7 bundled providers, 1 scope" in (
        tab.locator("#models-status").inner_text()
    )

    with tab.expect_response(lambda r: r.url.startswith(f"{server.url}/v1/admin/ai-models/discover")) as info:
        tab.get_by_role("button", name="Discover AI Models").click()
    discovered = info.value.json()
    # the tenant's openai instance (its baseUrl set at acme/_tenant) serves this scope's calls, so
    # Discover lists it too (issue 46) — the emulator has no model listing: skipped, saying why
    assert [(s["tenant"], s["project"]) for s in discovered["scopes"]] == [
        ("acme", "_tenant"),
        ("acme", "ui"),
    ]
    inherited, scope = discovered["scopes"]
    assert (inherited["instances"], inherited["skippedInstances"]) == (
        [],
        [{"instance": "openai", "providerType": "openai", "error": "HTTP 404"}],
    )
    assert [
        (i["instance"], i["providerType"], i["models"], i["written"], i["removed"])
        for i in scope["instances"]
    ] == [("lab", "ollama", 3, 3, 0)]
    assert scope["skippedInstances"] == [
        {
            "instance": "locked",
            "providerType": "openai",
            "error": "HTTP 401 (key missing, wrong or not allowed)",
        }
    ]
    assert (discovered["models"], discovered["skipped"]) == (3, 2)
    after = discovered["refresh"]
    assert (after["documentsLoaded"], after["overrideScopes"]) == (111, 2)
    expect(tab.locator("#models-status")).to_have_text(
        f"Discovery: 3 models listed by 1 instance (3 written, 0 removed), 2 instances skipped, in "
        f"{ms(discovered['durationMs'])} ms. " + counters_of_refresh(after)
    )
    report = tab.locator("#models-report")
    assert report.locator("table.discovery tbody td").all_inner_texts() == [
        "acme/ui",
        "lab",
        "ollama",
        "3",
        "3",
        "0",
        f"{ms(scope['instances'][0]['durationMs'])} ms",
    ]
    expect(report.locator("ul.skipped-instances li")).to_have_text(
        ["openai (acme/_tenant): HTTP 404", "locked (acme/ui): HTTP 401 (key missing, wrong or not allowed)"]
    )
    assert len(site.emulator.requests("/lab/api/tags")) == 1

    # the discovered models are in the pagele, each field with the layer that set it
    lab = tab.locator("section[aria-labelledby=models-lab-title]")
    expect(lab.locator("h2")).to_have_text("lab 3 models")
    expect(lab.locator("tbody th code")).to_have_text(sorted(LAB_MODELS))
    kind = lab.locator("tbody tr").first.locator("td").nth(3)
    expect(kind).to_have_text("chatset by project auto")
    assert kind.locator(".layer").get_attribute("title") == "set by acme/ui auto"
    tab.get_by_label("Provider instance").select_option("lab")
    tab.locator("#models-form").get_by_role("button", name="Show").click()
    expect(tab.locator("#models-status")).to_have_text("3 models of 1 instance in acme/ui.")
    expect(tab.locator("table.models")).to_have_count(1)

    # a bundled model: the system layer (the bundled copy bootstrapped into _system) set its fields
    tab.get_by_label("Provider instance").select_option("anthropic")
    tab.locator("#models-form").get_by_role("button", name="Show").click()
    haiku = tab.locator("tr[data-model='anthropic/claude-haiku-4-5']")
    expect(haiku.locator("td").nth(0)).to_have_text("200,000set by system manual")
    expect(haiku.locator("td").nth(5)).to_have_text("1 USDset by system manual")


def test_refresh_needs_an_operator_token_and_says_so(tab, server, site):
    made = httpx.post(
        f"{server.url}/v1/tokens",
        json={"tenant": "acme", "project": "*", "role": "tenant-admin"},
        headers={"Authorization": f"Bearer {server.token}"},
        timeout=30,
    )
    assert made.status_code == 201, made.text
    sign_in(tab, made.json()["token"])
    tab.locator("#nav a[data-page=models]").click()
    expect(tab.locator("table.models").first).to_be_visible()  # reading the catalog is anyone's
    tab.get_by_role("button", name="Discover AI Models").click()
    expect(tab.locator("#models-error")).to_have_text(
        "this needs an operator token (an admin token bound to tenant '*')"
    )
    assert json.loads(made.text)["role"] == "tenant-admin"

"""The web UI in headless Chromium against a real `zarniwoop serve` whose providers are the loopback emulator.

Debian's `chromium` driven by Playwright through `executable_path` (no browser download); one browser
and one server for the module, a fresh tab per test. Each test signs in to a project of its own (the
printed admin token may name any), so cooldowns and the usage log of one test never leak into
another. Every request the page makes must go to the server's own origin.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from zarniwoop.llm.usage import UsageRecord, UsageStore
from zarniwoop.runtime import Runtime

from ..support.bodies import openalex_works, wikipedia_pages
from ..support.emulator import Emulator, Reply
from ..support.runtime import endpoint, only, write_config
from ..support.served import Served, serve_command, served, server_env

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} is absent: install Debian's chromium (apt-get install chromium)", allow_module_level=True
    )
sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the playwright package is absent or broken: pip install -e '.[test]'",
    exc_type=ImportError,
)
expect = sync_api.expect

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # belt and braces: the browser resolves no name at all, so nothing could load from elsewhere
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
WIKI = "/w/rest.php/v1/search/page"
TIMEOUT_MS = 10_000
MARKUP = "<img src=x onerror=\"document.title='pwned'\"><b>bold</b>"
HOSTILE_WORK = {
    "id": "javascript:document.title='pwned'",
    "display_name": MARKUP,
    "primary_location": {"pdf_url": "javascript:document.title='pwned'", "source": {"display_name": MARKUP}},
}


@dataclass(frozen=True)
class Site:
    config: Path
    home: Path


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    """The emulator and a config whose providers point at it; `home` holds the server's database."""
    directory = tmp_path_factory.mktemp("web-ui")
    emulator = Emulator().start()
    emulator.add(f"/bad{WIKI}", Reply(status=503))
    emulator.add(f"/w{WIKI}", Reply.json(wikipedia_pages("Aurora", "Aurora borealis", "Banana bread")))
    emulator.add("/oa/works", Reply.json(openalex_works(2, "Aurora study")))
    emulator.add("/evil/works", Reply.json({"results": [HOSTILE_WORK]}))
    settings = {
        **only(),
        **endpoint("flaky", "wikipedia", f"{emulator.url}/bad"),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/w"),
        **endpoint("oa", "openalex", f"{emulator.url}/oa", quota__daily=50),
        **endpoint("evil", "openalex", f"{emulator.url}/evil"),
        # enabled but keyless: the routing page must mark it "no key"
        **endpoint("paid", "serper", f"{emulator.url}/serper"),
        "research.default.encyclopedia": "flaky",
        "research.fallback.encyclopedia": "wiki",
        "research.default.web": "flaky",
        "research.fallback.web": "wiki",
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.academic": 300,
    }
    try:
        yield Site(write_config(directory, {"settings": settings}), directory / "home")
    finally:
        emulator.stop()


@pytest.fixture(scope="module")
def server(site) -> Iterator[Served]:
    with served(site.config, site.home) as running:
        assert running.token is not None  # no token configured yet: serve printed an admin token
        yield running


@pytest.fixture(scope="module")
def user_token(site, server) -> str:
    """A user-role token of tenant `acme`, project `ui`, made while the server runs (it shares the DB)."""
    made = subprocess.run(
        serve_command(
            "--config", str(site.config), "tokens", "create", "--tenant", "acme", "--project", "ui", "--json"
        ),
        env=server_env(site.home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout)["token"])


def record_llm_calls(site: Site, *records: UsageRecord) -> None:
    """Write LLM usage rows into the running server's database, as its LLM manager would."""

    async def write() -> None:
        runtime = await Runtime.open(site.config, home=site.home)
        try:
            for record in records:
                await UsageStore(runtime.db).record(record)
        finally:
            await runtime.aclose()

    # on a thread of its own: Playwright's sync API owns this thread's event loop
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, write()).result(timeout=30)


def llm_call(project: str, account: str, tokens_in: int, tokens_out: int, cost: float | None) -> UsageRecord:
    return UsageRecord(
        "acme", account, project, None, "anthropic", "anthropic", "claude-sonnet-4-5", "chat",
        tokens_in, tokens_out, cost, "account", 120,
    )  # fmt: skip


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    profile = tempfile.mkdtemp(prefix="zw-chromium-")
    driver = sync_api.sync_playwright().start()
    try:
        context = driver.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=ARGS,
            viewport={"width": 1366, "height": 900},
        )
        context.set_default_timeout(TIMEOUT_MS)
        try:
            yield context
        finally:
            context.close()
    finally:
        driver.stop()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(browser, server) -> Iterator[object]:
    tab = browser.new_page()  # a new tab: its own, empty sessionStorage
    requested: list[str] = []
    tab.on("request", lambda request: requested.append(request.url))
    tab.goto(server.url + "/")
    expect(tab.locator("body[data-ready=true]")).to_have_count(1)
    try:
        yield tab
        outside = [url for url in requested if not url.startswith(server.url + "/")]
        assert outside == [], f"the page loaded from elsewhere: {outside}"
        assert server.token not in tab.content()
    finally:
        tab.close()


def sign_in(page, token: str, project: str | None = None, tenant: str | None = None) -> None:
    page.get_by_label("API token").fill(token)
    if project or tenant:
        page.get_by_text("Scope (optional)").click()
        if tenant:
            page.get_by_label("Tenant").fill(tenant)
        if project:
            page.get_by_label("Project").fill(project)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("navigation", name="Pages")).to_be_visible()


def search(page, query: str, modality: str) -> None:
    page.get_by_label("Query").fill(query)
    page.get_by_label("Modality").select_option(modality)
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#search-results .summary")).to_be_visible()


def attempt_rows(page) -> list[list[str]]:
    rows = page.locator("table.attempts tbody tr")
    return [[c.strip() for c in rows.nth(i).locator("td").all_inner_texts()] for i in range(rows.count())]


def test_search_shows_the_hits_and_the_attempts_trail(page, server, tmp_path):
    sign_in(page, server.token, project="search")
    expect(page.locator("#scope-label")).to_contain_text("tenant default · project search")
    search(page, "aurora", "ENCYCLOPEDIA")
    titles = page.locator("ol.hits > li h3").all_inner_texts()
    assert titles == ["Aurora", "Aurora borealis", "Banana bread"]
    first = page.locator("ol.hits > li").first
    expect(first.get_by_role("link", name="Aurora")).to_have_attribute("href", re.compile(r"/w/wiki/Aurora$"))
    expect(first.locator(".snippet")).to_have_text("Aurora is a thing")
    expect(first.locator("dl.extras")).to_contain_text("About Aurora")
    expect(page.locator("#search-results .summary")).to_have_text(
        "3 hits from wiki · ENCYCLOPEDIA · NORMAL tier"
    )
    rows = attempt_rows(page)
    assert [row[:3] for row in rows] == [["1", "flaky", "hard_error"], ["2", "wiki", "success"]]
    assert [row[4] for row in rows] == ["HTTP 503", ""]
    assert all(re.fullmatch(r"\d+ ms", row[3]) for row in rows)
    expect(page.locator("#search-status")).to_have_text("3 hits from wiki.")  # read out, not shown twice
    page.screenshot(path=str(tmp_path / "search.png"), full_page=True)


def test_academic_extras_and_the_cached_badge(page, server):
    sign_in(page, server.token, project="academic")
    search(page, "aurora", "ACADEMIC")
    hit = page.locator("ol.hits > li").first
    extras = hit.locator("dl.extras > div")
    expect(extras.first).to_have_text("AuthorsAuthor 1")
    expect(extras.nth(1)).to_have_text("Year2021")
    expect(hit.get_by_role("link", name="10.1234/aurora study.1")).to_have_attribute(
        "href", "https://doi.org/10.1234/aurora%20study.1"
    )
    expect(page.locator("#search-results .badge", has_text="cached")).to_have_count(0)
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#search-results .summary .badge")).to_have_text("cached")
    assert [row[:3] for row in attempt_rows(page)] == [["1", "oa", "success"]]  # the search that filled it


def test_refresh_asks_the_providers_again(page, server):
    sign_in(page, server.token, project="refresh")
    search(page, "aurora refresh", "ACADEMIC")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#search-results .summary .badge")).to_have_text("cached")
    expect(page.locator("#search-status")).to_contain_text("fetched")
    page.get_by_role("button", name="Refresh", exact=True).first.click()
    expect(page.locator("#search-results .badge", has_text="cached")).to_have_count(0)
    expect(page.locator("#search-status")).not_to_contain_text("cached")


def test_expert_options_pin_one_provider(page, server):
    sign_in(page, server.token, project="expert")
    page.get_by_text("Expert options").click()
    page.get_by_label("Pinned provider").select_option("wiki")
    search(page, "aurora", "ENCYCLOPEDIA")
    expect(page.locator("#search-results .summary")).to_contain_text("EXPERT tier")
    assert [row[:3] for row in attempt_rows(page)] == [["1", "wiki", "success"]]


def test_a_providers_markup_and_script_urls_stay_inert_text(page, server):
    sign_in(page, server.token, project="hostile")
    page.get_by_text("Expert options").click()
    page.get_by_label("Pinned provider").select_option("evil")
    search(page, "aurora", "ACADEMIC")
    hit = page.locator("ol.hits > li")
    expect(hit).to_have_count(1)
    expect(hit.locator("h3")).to_have_text(MARKUP)  # shown as the text it is
    expect(hit.locator("img, b")).to_have_count(0)
    expect(hit.locator("a")).to_have_count(0)  # a javascript: URL is never made a link
    expect(hit.locator("dl.extras")).to_contain_text("javascript:document.title")
    assert page.title() == "Search — Zarniwoop"


def test_routing_page_shows_cooldown_selection_key_and_quota(page, server, tmp_path):
    sign_in(page, server.token, project="routing")
    search(page, "aurora", "WEB")  # flaky answers 503 and cools down for WEB
    page.get_by_role("link", name="Routing").click()
    providers = page.locator("table.providers")
    expect(providers).to_be_visible()
    flaky = providers.locator("tr[data-instance=flaky]")
    expect(flaky.locator(".state")).to_have_text("COOLDOWN")
    expect(flaky).to_contain_text("last call failed")
    expect(flaky).to_contain_text("WEB: HTTP 503")
    expect(flaky.locator("td").last).to_have_text("HTTP 503")  # lastError: this is an admin token
    wiki = providers.locator("tr[data-instance=wiki]")
    expect(wiki.locator(".state")).to_have_text("READY")
    expect(wiki.locator(".badge", has_text="selected")).to_be_visible()
    # cooldowns are per modality: flaky is still ENCYCLOPEDIA's pick, wiki took over WEB
    expect(wiki.locator("td").nth(3)).to_have_text("selectedWEB")
    paid = providers.locator("tr[data-instance=paid]")
    expect(paid.locator(".state")).to_have_text("DISABLED")
    expect(paid.locator(".badge", has_text="no key")).to_be_visible()
    oa = providers.locator("tr[data-instance=oa]")
    expect(oa.locator("meter")).to_have_attribute("max", "50")
    expect(oa.locator(".quota")).to_contain_text("/ 50 per day")
    # built-in instances switched off by the config are hidden until asked for
    expect(providers.locator("tr[data-instance=wikipedia]")).to_have_count(0)
    page.get_by_label(re.compile(r"Show the \d+ switched-off instances")).check()
    expect(providers.locator("tr[data-instance=wikipedia] .state")).to_have_text("DISABLED")
    web = page.locator("table.cascades tr", has=page.locator("th", has_text=re.compile("^WEB$")))
    expect(web.locator("li")).to_have_text(
        ["flaky skipped_cooldown", "wiki ready selected", "paid skipped_no_key"]
    )
    expect(page.locator("#scope-label .badge")).to_have_text("admin view")
    page.screenshot(path=str(tmp_path / "routing.png"), full_page=True)


def test_a_user_token_sees_its_own_scope_and_no_last_error(page, user_token):
    sign_in(page, user_token)
    expect(page.locator("#scope-label")).to_have_text("tenant acme · project ui")
    page.get_by_role("link", name="Routing").click()
    expect(page.locator("table.providers")).to_be_visible()
    headers = page.locator("table.providers thead th").all_inner_texts()
    assert headers == [
        "State",
        "Instance",
        "Modalities",
        "Key",
        "Selected",
        "Cooldown until",
        "Quota",
        "Reachable",
    ]
    assert user_token not in page.content()


def test_a_bad_token_shows_the_401_message(page, tmp_path):
    sign_in_button = page.get_by_role("button", name="Sign in")
    page.get_by_label("API token").fill("zw_not_a_valid_token")
    sign_in_button.click()
    expect(page.locator("#signin-error")).to_have_text("Sign-in failed: invalid or revoked token")
    expect(page.get_by_role("navigation", name="Pages")).to_be_hidden()
    expect(page.get_by_label("API token")).to_have_value("")
    assert page.evaluate("sessionStorage.length") == 0
    assert "zw_not_a_valid_token" not in page.content()
    page.screenshot(path=str(tmp_path / "signin.png"))


def test_bad_input_shows_one_message_naming_the_field(page, server, tmp_path):
    sign_in(page, server.token, project="errors")
    search(page, "aurora", "ENCYCLOPEDIA")
    page.get_by_label("Query").fill("x" * 2001)
    page.get_by_role("button", name="Search", exact=True).click()
    error = page.locator("#search-error")
    expect(error).to_have_text("query: must be at most 2000 characters, got 2001")
    expect(page.get_by_label("Query")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Query")).to_be_focused()
    expect(page.locator("#search-results ol.hits")).to_have_count(0)  # the older answer is gone
    page.get_by_label("Query").fill("aurora")
    max_results = page.locator("#page-search").get_by_label("Max results")
    max_results.fill("500")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(error).to_have_text(re.compile(r"^maxResults: .*100"))
    expect(page.get_by_label("Query")).not_to_have_attribute("aria-invalid", "true")
    expect(max_results).to_have_attribute("aria-invalid", "true")
    page.screenshot(path=str(tmp_path / "error.png"))


def test_investigate_ranks_hits_with_reasons_and_lists_the_dropped(page, server, tmp_path):
    sign_in(page, server.token, project="investigate")
    page.get_by_role("link", name="Investigate").click()
    page.get_by_label("Question").fill("what causes the aurora")
    page.get_by_role("button", name="Investigate").click()
    results = page.locator("#investigate-results")
    expect(results.locator(".summary")).to_contain_text("plan: heuristic · evaluate: lexical")
    ranked = results.locator("ol.hits > li")
    expect(ranked.first.locator(".score")).to_contain_text("score 0.50")
    expect(ranked.first.locator(".reason")).to_have_text("Why: matches 1/2 key terms")
    titles = ranked.locator("h3").all_inner_texts()
    assert "Aurora" in titles and "Aurora study 1" in titles and "Banana bread" not in titles
    dropped = results.locator("ul.dropped li", has_text="Banana bread")
    expect(dropped).to_have_count(1)
    expect(results.get_by_role("heading", name=re.compile(r"^Dropped \(\d+\)$"))).to_be_visible()
    expect(results).to_contain_text("Strategy: heuristic")
    modalities = results.locator("table").first.locator("tbody td:nth-child(2)").all_inner_texts()
    assert modalities == ["WEB", "ACADEMIC", "ENCYCLOPEDIA"]
    page.screenshot(path=str(tmp_path / "investigate.png"), full_page=True)


def test_usage_page_tables_and_a_bad_since(page, server, tmp_path):
    sign_in(page, server.token, project="usage")
    search(page, "aurora", "ENCYCLOPEDIA")
    page.get_by_role("link", name="Usage").click()
    table = page.locator("table.usage")
    expect(table).to_be_visible()
    rows = table.locator("tbody tr")
    cells = [
        [c.strip() for c in rows.nth(i).locator("td").all_inner_texts()][:6] for i in range(rows.count())
    ]
    assert cells == [
        ["flaky", "wikipedia", "ENCYCLOPEDIA", "1", "0", "1"],
        ["wiki", "wikipedia", "ENCYCLOPEDIA", "1", "3", "0"],
    ]
    assert [c.strip() for c in table.locator("tfoot td").all_inner_texts()][:6] == [
        "Total",
        "",
        "",
        "2",
        "3",
        "1",
    ]
    expect(page.locator("#usage-view")).to_contain_text("oa")  # its daily quota
    page.screenshot(path=str(tmp_path / "usage.png"), full_page=True)
    page.get_by_label("Since").fill("yesterday")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#usage-error")).to_have_text(
        "since: expected a duration like 24h, 7d, 30m or an ISO date, got 'yesterday'"
    )
    expect(page.get_by_label("Since")).to_have_attribute("aria-invalid", "true")


def test_the_session_survives_a_reload_and_sign_out_forgets_it(page, server):
    sign_in(page, server.token, project="session")
    page.reload()
    expect(page.get_by_role("navigation", name="Pages")).to_be_visible()
    expect(page.locator("#scope-label")).to_contain_text("project session")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("API token")).to_be_visible()
    expect(page.get_by_label("API token")).to_be_focused()
    assert page.evaluate("sessionStorage.length") == 0


def test_usage_page_shows_the_llm_dashboard_of_the_tokens_project(page, site, user_token, tmp_path):
    record_llm_calls(
        site,
        llm_call("ui", "mike", 12, 29, 0.000471),
        llm_call("ui", "ann", 100, 400, None),
        llm_call("elsewhere", "mike", 5, 5, 0.0001),  # another project: not in this token's view
    )
    sign_in(page, user_token)
    page.get_by_role("link", name="Usage").click()
    llm = page.get_by_role("region", name="LLM tokens")
    periods = llm.locator("table.llm-periods tbody tr")
    expect(periods).to_have_count(2)
    cells = [[c.strip() for c in periods.nth(i).locator("td").all_inner_texts()] for i in range(2)]
    assert [row[1:] for row in cells] == [["541", "2", "$0.0005", "1"]] * 2  # 41 + 500 tokens, one unpriced
    assert cells[0][0].startswith("Today (") and cells[1][0].startswith("This month (")
    by_account = llm.locator("table", has=page.locator("caption", has_text="By account"))
    rows = by_account.locator("tbody tr")
    assert sorted(tuple(rows.nth(i).locator("td").all_inner_texts()) for i in range(rows.count())) == [
        ("ann", "500", "500"),
        ("mike", "41", "41"),
    ]
    expect(llm).to_contain_text("No LLM quota applies here.")
    page.get_by_label("LLM view").select_option("tenant")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#usage-error")).to_have_text("the tenant-wide LLM usage needs a tenant-admin token")
    expect(llm).to_have_count(0)  # the project's figures are not left standing under the error
    page.screenshot(path=str(tmp_path / "usage-llm.png"), full_page=True)

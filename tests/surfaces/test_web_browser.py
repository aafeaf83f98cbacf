"""The web UI in headless Chromium against a real `zarniwoop serve` whose providers are the loopback emulator.

Debian's `chromium` driven by Playwright through `executable_path` (no browser download); one browser
and one server for the module, a fresh tab per test. Each test signs in to a project of its own (the
printed admin token may name any), so cooldowns and the usage log of one test never leak into
another. Every request the page makes must go to the server's own origin.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from zarniwoop.ledger import UsageRecord, UsageStore
from zarniwoop.runtime import Runtime

from ..support.bodies import openalex_works, wikipedia_pages
from ..support.emulator import Emulator, Reply
from ..support.runtime import endpoint, only, write_config
from ..support.served import Served, served
from ..support.site import Site, make_token

# its module-scoped server is set up once: the module's tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)

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
    return str(make_token(site, "acme", "ui")["token"])


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
        signin = page.locator("#signin-form")
        if tenant:
            signin.get_by_label("Tenant").fill(tenant)
        if project:
            signin.get_by_label("Project").fill(project)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("navigation", name="Pages")).to_be_visible()


def search(page, query: str, modality: str) -> None:
    page.get_by_label("Query").fill(query)
    page.get_by_label("Modality", exact=True).select_option(modality)
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
    # an id and a name that spell the same are shown once (issue 46: "Semantic Scholar (semanticscholar)")
    expect(providers.locator("tr[data-instance=semanticscholar] th")).to_have_text(
        "semanticscholarSemantic Scholar"
    )
    web = page.locator("table.cascades tr", has=page.locator("th", has_text=re.compile("^WEB$")))
    expect(web.locator("li")).to_have_text(
        ["flaky skipped_cooldown", "wiki ready selected", "paid skipped_no_key"]
    )
    expect(page.locator("#scope-label .badge")).to_have_text("operator token: every tenant")
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
    # only the pages a user token may use are offered; an admin page's address shows Search
    # (issue 46: it saw the admin navigation and an enabled Save over an empty Settings form)
    expect(page.locator("#nav a:visible")).to_have_text(
        ["Search", "Routing", "Investigate", "Usage", "Models"]
    )
    page.evaluate("location.hash = '#settings'")
    expect(page).to_have_url(re.compile("#search$"))
    expect(page.locator("#page-settings")).to_be_hidden()
    expect(page.locator("#page-search")).to_be_visible()


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


# ---- the settings page (issue 14): every change through the UI, checked where it takes effect ----

SERPER_KEY = "serper-ui-secret-7f3a9c"


def open_settings(page, server, project: str) -> None:
    sign_in(page, server.token, project=project)
    page.get_by_role("link", name="Settings").click()
    expect(page.locator("#settings-status")).to_contain_text(f"project {project}")


def instance_form(page, instance_id: str):
    form = page.locator(f"details.instance[data-instance={instance_id}]")
    if form.get_attribute("open") is None:
        form.locator("summary").click()
    return form


def save_settings(page, written: int) -> None:
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#settings-status")).to_have_text(
        f"Saved: {written} setting{'' if written == 1 else 's'} written."
    )


def routing_row(page, instance_id: str):
    page.get_by_role("link", name="Routing").click()
    expect(page.locator("table.providers")).to_be_visible()
    return page.locator(f"table.providers tr[data-instance={instance_id}]")


def test_settings_disable_a_provider_routing_shows_it_and_search_skips_it(page, server, tmp_path):
    open_settings(page, server, "toggle")
    instance_form(page, "oa").get_by_label("Enabled").uncheck()
    page.once("dialog", lambda dialog: dialog.accept())  # switching a provider off asks first
    save_settings(page, 1)
    # the state in Routing's words (issue 46: Settings said "on" where Routing said DISABLED)
    expect(page.locator("details.instance[data-instance=oa] summary .state")).to_have_text("DISABLED")
    page.screenshot(path=str(tmp_path / "settings.png"), full_page=True)
    routing_row(page, "wiki")  # the routing page is shown
    page.get_by_label(re.compile(r"Show the \d+ switched-off instances")).check()
    expect(page.locator("table.providers tr[data-instance=oa] .state")).to_have_text("DISABLED")
    page.get_by_role("link", name="Search").click()
    search(page, "aurora switched off", "ACADEMIC")
    assert [row[:3] for row in attempt_rows(page)] == [["1", "evil", "success"]]  # oa is not asked


def test_settings_a_key_makes_a_provider_keyable_and_is_never_shown(page, server, site):
    bodies: list[str] = []
    page.on("response", lambda r: bodies.append(r.text()) if "/v1/" in r.url else None)
    open_settings(page, server, "keys")
    paid = instance_form(page, "paid")
    expect(paid.locator("summary .state")).to_have_text("DISABLED")  # as Routing says: no key yet
    expect(paid.locator(".key-state")).to_have_text("No key is set.")
    paid.get_by_label("API key").fill(SERPER_KEY)
    save_settings(page, 1)
    paid = instance_form(page, "paid")
    expect(paid.locator("summary .state")).to_have_text("READY")
    expect(paid.locator(".key-state")).to_contain_text("A key is set")
    expect(paid.get_by_label("API key")).to_have_value("")
    row = routing_row(page, "paid")
    expect(row.locator("td").nth(2)).to_have_text("yessetting")  # keyable, from a setting
    expect(row.locator(".badge", has_text="no key")).to_have_count(0)
    assert SERPER_KEY not in page.content()
    assert bodies and not [b for b in bodies if SERPER_KEY in b]
    stored = [p for p in site.home.rglob("*") if p.is_file() and SERPER_KEY.encode() in p.read_bytes()]
    assert stored == [], f"the key is stored in plain text in {stored}"


def test_settings_reorder_the_academic_fallbacks_and_search_follows(page, server):
    open_settings(page, server, "reorder")
    order = page.get_by_role("list", name="ACADEMIC order")
    expect(order.locator("li code")).to_have_text(["oa", "evil"])  # paid has no key: shown apart
    # the ↑/↓ buttons of every list stand in one column, whatever the ids' lengths (issue 46)
    lefts = page.locator("ol.order li .moves").evaluate_all(
        "els => els.map((e) => e.getBoundingClientRect().left)"
    )
    assert len(lefts) >= 4 and len(set(lefts)) == 1, lefts
    page.get_by_role("button", name="Move evil up in ACADEMIC").click()
    expect(order.locator("li .role")).to_have_text(["default", "fallback"])
    expect(order.locator("li code")).to_have_text(["evil", "oa"])
    expect(page.get_by_role("button", name="Move evil up in ACADEMIC")).to_be_focused()
    save_settings(page, 1)  # research.default.academic=evil: oa follows in the endpoint order anyway
    expect(page.get_by_role("list", name="ACADEMIC order").locator("li code")).to_have_text(["evil", "oa"])
    page.get_by_role("link", name="Search").click()
    search(page, "aurora reordered", "ACADEMIC")
    assert [row[:3] for row in attempt_rows(page)] == [["1", "evil", "success"]]


def test_settings_a_bad_value_is_refused_with_the_field_marked_and_nothing_written(page, server):
    open_settings(page, server, "badvalue")
    instance_form(page, "evil").get_by_label("Enabled").uncheck()
    rate = instance_form(page, "oa").get_by_label("Requests per second")
    rate.fill("-1")
    page.once("dialog", lambda dialog: dialog.accept())  # switching evil off asks first
    page.get_by_role("button", name="Save").click()
    error = page.locator("#settings-error")
    expect(error).to_contain_text("research.endpoint.oa.rateLimit.perSecond")
    expect(rate).to_have_attribute("aria-invalid", "true")
    expect(rate).to_be_focused()
    page.get_by_role("button", name="Load").click()  # what the server holds now
    expect(page.locator("#settings-status")).to_contain_text("project badvalue")
    expect(instance_form(page, "evil").get_by_label("Enabled")).to_be_checked()  # the batch's other half
    expect(instance_form(page, "oa").get_by_label("Requests per second")).to_have_value("")
    expect(routing_row(page, "evil").locator(".state")).to_have_text("READY")


def test_tokens_create_shows_it_once_then_revoke_and_it_no_longer_signs_in(page, server, browser):
    sign_in(page, server.token, project="tokens")
    page.get_by_role("link", name="Tokens").click()
    expect(page.locator("table.tokens-list")).to_be_visible()
    page.locator("#page-tokens").get_by_label("Project").fill("made-in-ui")  # tenant: as signed in
    page.locator("#page-tokens").get_by_label("Label").fill("ui test")
    page.get_by_role("button", name="Create token").click()
    shown = page.locator("#tokens-new-value")
    token = shown.input_value()
    assert re.fullmatch(r"zw_\S{20,}", token), token
    made_id = re.search(r"tok_[0-9a-f]{12}", page.locator(".new-token label").inner_text())[0]
    row = page.locator(f"table.tokens-list tr[data-token={made_id}]")
    expect(row.locator("td")).to_have_text(
        ["default", "made-in-ui", "user", "ui test", re.compile(".+"), "Revoke"]
    )
    expect(row.locator("th")).to_have_text(made_id)  # the full id
    browser.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page.get_by_role("button", name="Copy").click()
    expect(page.locator("#tokens-status")).to_have_text("Copied to the clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == token
    page.get_by_role("link", name="Search").click()
    page.get_by_role("link", name="Tokens").click()
    expect(page.locator("#tokens-new-value")).to_have_count(0)  # shown once
    assert token not in page.content()
    page.once("dialog", lambda dialog: dialog.accept())  # Revoke asks first
    page.get_by_role("button", name=f"Revoke {made_id}").click()
    expect(page.locator("#tokens-status")).to_have_text(f"Revoked {made_id}.")
    expect(row).to_have_count(0)
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#signin-error")).to_have_text("Sign-in failed: invalid or revoked token")


# ---- every page at desktop and phone width: screenshots as artifacts, no horizontal page scroll ----

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"  # git-ignored
WIDTHS = (1280, 390)


def visit_every_page(page, server):
    """Yield each page's name once it shows data: sign-in, then every page of the nav."""
    yield "signin"
    sign_in(page, server.token, project="screens")
    search(page, "aurora", "ENCYCLOPEDIA")
    yield "search"
    for name, ready in [
        ("routing", "table.providers"),
        ("investigate", "#investigate-form"),
        ("usage", "table.usage"),
        ("settings", "details.instance"),
        ("tokens", "table.tokens-list"),
        ("credentials", "#credentials-view h2"),
        ("models", "table.models"),
        ("grants", "#grants-view h2"),
    ]:
        page.locator(f"#nav a[data-page={name}]").click()
        expect(page.locator(ready).first).to_be_visible()
        if name == "investigate":
            page.get_by_label("Question").fill("what causes the aurora")
            page.get_by_role("button", name="Investigate").click()
            expect(page.locator("#investigate-results .summary")).to_be_visible()
        if name == "settings":
            instance_form(page, "oa")
        if name == "credentials":  # one stored, so the list and its Rotate / Delete buttons show
            page.get_by_label("Credential name").fill("screens_key")
            page.get_by_label("Credential value").fill("screens-secret-0001")
            page.locator("#credentials-form").get_by_role("button", name="Save").click()
            # the status comes after the list is drawn again (Stored, or Rotated on a later visit)
            expect(page.locator("#credentials-status")).to_contain_text("screens_key for tenant default.")
        yield name


def nav_pages(page) -> list[str]:
    """The pages the navigation offers, in its order: a new page must join `visit_every_page`."""
    return page.eval_on_selector_all("#nav a[data-page]", "links => links.map((a) => a.dataset.page)")


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_fits_the_viewport_and_is_screenshotted(page, server, width):
    page.set_viewport_size({"width": width, "height": 900})
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    seen, header_heights = [], {}
    for name in visit_every_page(page, server):
        page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)
        document_width = page.evaluate("document.documentElement.scrollWidth")
        assert document_width == width, f"{name} is {document_width} px wide at {width} px"
        header_heights[name] = page.locator("header.top").bounding_box()["height"]
        if name == "routing":  # a table wider than the phone says so; none at 1280 px needs to
            shaded = page.locator(".table-box.more-right").count()
            assert (shaded > 0) if width == 390 else (shaded == 0), f"{shaded} shaded boxes at {width} px"
        seen.append(name)
    assert seen == ["signin", *nav_pages(page)]
    signed_in = {name: height for name, height in header_heights.items() if name != "signin"}
    if width == 390:  # issue 46: one compact header, the same on every page
        assert len(set(signed_in.values())) == 1 and max(signed_in.values()) <= 120, signed_in


# ---- accessibility: axe-core on every page, and every control reachable by keyboard ----

AXE = Path(__file__).resolve().parents[1] / "support" / "axe" / "axe.min.js"


def axe_violations(page) -> list[str]:
    """Serious and critical axe-core violations of the page as shown (CDP evaluation: the CSP stays on)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    found = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ["violations"]})).violations
            .filter((v) => v.impact === "serious" || v.impact === "critical")
            .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`)"""
    )
    return list(found)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_serious_or_critical_violation_on_any_page(page, server, scheme):
    if not AXE.exists():
        pytest.skip(f"{AXE} is absent (tests/support/axe/README.md says how to vendor it)")
    page.emulate_media(color_scheme=scheme)
    report = {name: axe_violations(page) for name in visit_every_page(page, server)}
    assert list(report) == ["signin", *nav_pages(page)]
    assert {name: found for name, found in report.items() if found} == {}
    page.evaluate("document.querySelector('main').append(document.createElement('img'))")  # no alt
    assert [v for v in axe_violations(page) if v.startswith("image-alt (critical)")]  # axe does look


CONTROLS = """() => {
  const all = [...document.querySelectorAll("a[href], button, input, select, textarea, summary, [tabindex='0']")]
    .filter((el) => !el.disabled && el.checkVisibility({ visibilityProperty: true }));
  all.forEach((el, i) => { el.dataset.kb = String(i); });
  return all.length;
}"""


def test_every_control_of_every_page_is_reachable_by_tab(page, server):
    unreachable = {}
    for name in visit_every_page(page, server):
        total = page.evaluate(CONTROLS)
        page.evaluate("document.activeElement && document.activeElement.blur()")
        reached = set()
        for _ in range(total + 3):
            page.keyboard.press("Tab")
            reached.add(page.evaluate("document.activeElement?.dataset?.kb ?? null"))
        missing = {str(i) for i in range(total)} - reached
        if missing:
            unreachable[name] = page.evaluate(
                "(ids) => ids.map((i) => document.querySelector(`[data-kb='${i}']`).outerHTML.slice(0, 80))",
                sorted(missing),
            )
    assert unreachable == {}
    # and the settings page works from the keyboard: reorder with Enter
    page.goto(f"{server.url}/#settings")
    page.reload()  # a fresh page: its status fills once the settings are shown
    expect(page.locator("#settings-status")).to_contain_text("project screens")
    page.get_by_role("button", name="Move evil up in ACADEMIC").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("list", name="ACADEMIC order").locator("li code")).to_have_text(["evil", "oa"])
    expect(page.get_by_role("button", name="Move evil up in ACADEMIC")).to_be_focused()


def test_a_search_url_is_shareable_and_restores_the_search(page, server):
    sign_in(page, server.token, project="share")
    search(page, "aurora shared", "ACADEMIC")
    assert page.url == f"{server.url}/#/search?q=aurora+shared&m=ACADEMIC"
    page.get_by_role("button", name="Sign out").click()
    page.goto(f"{server.url}/#/search?q=aurora&m=ENCYCLOPEDIA")
    page.reload()  # opened afresh, as a shared link is
    expect(page.locator("body[data-ready=true]")).to_have_count(1)
    sign_in(page, server.token, project="share")
    expect(page.locator("#search-results .summary")).to_contain_text("ENCYCLOPEDIA")
    assert page.locator("ol.hits > li h3").all_inner_texts() == ["Aurora", "Aurora borealis", "Banana bread"]
    expect(page.get_by_label("Query")).to_have_value("aurora")
    expect(page.get_by_label("Modality", exact=True)).to_have_value("ENCYCLOPEDIA")


def test_the_theme_toggle_is_remembered_by_the_browser(page, server):
    background = "getComputedStyle(document.body).backgroundColor"
    page.emulate_media(color_scheme="light")
    assert page.evaluate(background) == "rgb(247, 247, 245)"
    theme = page.get_by_role("button", name=re.compile("^Theme: "))
    expect(theme).to_have_text("Theme: system")
    theme.click()
    expect(theme).to_have_text("Theme: light")
    theme.click()
    expect(theme).to_have_text("Theme: dark")
    assert page.evaluate(background) == "rgb(22, 24, 27)"  # dark, although the system says light
    page.reload()
    expect(page.locator("body[data-ready=true]")).to_have_count(1)
    expect(page.get_by_role("button", name="Theme: dark")).to_be_visible()
    assert page.evaluate(background) == "rgb(22, 24, 27)"
    page.get_by_role("button", name="Theme: dark").click()  # back to the system's choice
    expect(page.get_by_role("button", name="Theme: system")).to_be_visible()
    assert page.evaluate(background) == "rgb(247, 247, 245)"

"""The console cannot surprise (issue 28), in headless Chromium against a real `zarniwoop serve`:
one move in an order editor writes only what that modality's new order needs; Revoke and
switching a provider off ask first; the Tokens page of an operator token says whose tokens it
lists; no table cuts its text and no chart clips its tick labels, at 1280 and 390 px.

The browser and the tab come from test_web_browser.py (its module skips, and so this one, where
Debian's chromium or Playwright is absent); the server, its site and its tokens are this module's.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from zarniwoop.ledger.audit import INSERT_SQL
from zarniwoop.runtime import Runtime

from ..support.bodies import wikipedia_pages
from ..support.cli import run_cli
from ..support.emulator import Emulator, Reply
from ..support.runtime import endpoint, only, write_config
from ..support.served import Served, served
from ..support.site import Site, make_token
from . import test_web_browser as web

# its module-scoped server is set up once: the module's tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)

browser = web.browser
tab = web.page
sign_in = web.sign_in
search = web.search
expect = web.expect

WIKI = "/w/rest.php/v1/search/page"
LONG_ERROR = (
    "the upstream search cluster is being re-indexed after a schema migration and refuses queries "
    "until every shard reports green; retry after the maintenance window announced on the status page"
)
P95_MS = 12_345  # five digits: the y axis of the p95 chart must show "12,000 ms" whole


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    directory = tmp_path_factory.mktemp("web-console-safety")
    emulator = Emulator().start()
    emulator.add(f"/w{WIKI}", Reply.json(wikipedia_pages("Aurora", "Aurora borealis")))
    emulator.add(
        f"/down{WIKI}",
        Reply.json({"error": {"code": "maintenance", "info": LONG_ERROR}}),
    )
    docs = directory / "docs"
    docs.mkdir()
    (docs / "aurora.md").write_text("# Night sky\n\nThe aurora glows green over the fjord every winter.\n")
    settings = {
        **only(),
        # ACADEMIC in settings order: oa, then two keyed providers without a key, then ax and pm
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
        **endpoint("paid", "serper", f"{emulator.url}/serper"),
        **endpoint("neural", "exa", f"{emulator.url}/exa"),
        **endpoint("ax", "arxiv", f"{emulator.url}/ax"),
        **endpoint("pm", "pubmed", f"{emulator.url}/pm"),
        **endpoint("down", "wikipedia", f"{emulator.url}/down"),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/w"),
        "research.default.encyclopedia": "down",
        "research.fallback.encyclopedia": "wiki",
        "research.endpoint.local.enabled": True,
        "research.cache.ttlSeconds": 0,
    }
    config = write_config(directory, {"settings": settings})
    home = directory / "home"
    indexed = run_cli("--config", str(config), "--project", "docs", "index", str(docs), home=home)
    assert indexed.code == 0, indexed.stderr
    try:
        yield Site(config, home)
    finally:
        emulator.stop()


@pytest.fixture(scope="module")
def server(site) -> Iterator[Served]:
    with served(site.config, site.home) as running:
        assert running.token is not None  # the operator token the banner prints
        yield running


def role_token(site: Site, tenant: str, project: str, role: str = "user", label: str | None = None) -> dict:
    return make_token(site, tenant, project, "--role", role, *(("--label", label) if label else ()))


def record_slow_calls(site: Site, project: str, count: int = 3) -> None:
    """Provider-call rows as the usage counter writes them: `wiki` answering in P95_MS ms."""

    async def write() -> None:
        runtime = await Runtime.open(site.config, home=site.home)
        now = time.time()
        try:
            for i in range(count):
                await runtime.db.execute(
                    INSERT_SQL,
                    (str(uuid.uuid4()), "default", project, "wiki", "wikipedia", "ENCYCLOPEDIA", "NORMAL",
                     "0" * 64, 2, True, "success", None, now - 60 * (i + 1), P95_MS, None, None),
                )  # fmt: skip
        finally:
            await runtime.aclose()

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API owns this thread's event loop
        pool.submit(asyncio.run, write()).result(timeout=30)


def project_settings(server: Served, project: str) -> dict[str, str]:
    answer = httpx.get(
        f"{server.url}/v1/settings",
        params={"level": "project", "project": project},
        headers={"Authorization": f"Bearer {server.token}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return {row["key"]: row["value"] for row in answer.json()["settings"] if row.get("level") == "project"}


def order_of(tab, modality: str) -> list[str]:
    return tab.get_by_role("list", name=f"{modality} order").locator("li code").all_inner_texts()


def save_and_capture(tab) -> dict:
    with tab.expect_request(
        lambda r: r.method == "PUT" and r.url.startswith(tab.url.split("#")[0] + "v1/settings")
    ) as sent:
        tab.get_by_role("button", name="Save").click()
    expect(tab.locator("#settings-status")).to_contain_text("Saved:")
    return dict(json.loads(sent.value.post_data or "{}"))


def test_one_move_writes_exactly_the_new_order_of_that_modality(tab, server):
    tab.goto(server.url + "/#settings")
    sign_in(tab, server.token, project="order")
    expect(tab.locator("#settings-status")).to_contain_text("project order")
    # the keyed providers without a key are skipped wherever they stand: not in the order, said apart
    assert order_of(tab, "ACADEMIC") == ["oa", "ax", "pm"]
    academic = tab.locator("div.modality", has=tab.get_by_role("list", name="ACADEMIC order"))
    expect(academic.locator(".hint")).to_have_text(
        "Skipped until a key is set, so not in this order: paid, neural."
    )

    tab.get_by_role("button", name="Move ax up in ACADEMIC").click()
    assert order_of(tab, "ACADEMIC") == ["ax", "oa", "pm"]
    batch = save_and_capture(tab)
    # ax first is all it takes: oa and pm follow in the endpoint order anyway; nothing else is pinned
    assert batch == {"level": "project", "set": {"research.default.academic": "ax"}, "delete": []}
    written = project_settings(server, "order")
    assert {k: v for k, v in written.items() if k.startswith("research.")} == {
        "research.default.academic": "ax"
    }
    expect(tab.locator("#settings-status")).to_have_text("Saved: 1 setting written.")
    assert order_of(tab, "ACADEMIC") == ["ax", "oa", "pm"]  # what the server walks now

    tab.get_by_role("button", name="Move pm up in ACADEMIC").click()
    assert order_of(tab, "ACADEMIC") == ["ax", "pm", "oa"]
    assert save_and_capture(tab)["set"] == {"research.fallback.academic": "pm"}  # the default stays as it was
    cascade = httpx.get(
        f"{server.url}/v1/_routing", params={"project": "order"},
        headers={"Authorization": f"Bearer {server.token}"}, timeout=30,
    ).json()["searchCascades"]["ACADEMIC"]  # fmt: skip
    assert [step["id"] for step in cascade] == ["ax", "pm", "oa", "paid", "neural"]


def test_switching_a_provider_off_asks_first(tab, server):
    tab.goto(server.url + "/#settings")
    sign_in(tab, server.token, project="switch")
    expect(tab.locator("#settings-status")).to_contain_text("project switch")
    web.instance_form(tab, "oa").get_by_label("Enabled").uncheck()
    asked: list[str] = []
    tab.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    tab.get_by_role("button", name="Save").click()
    expect(tab.locator("#settings-status")).to_have_text("Nothing saved.")
    assert asked == ["Switch off oa at project level? Searches there stop asking it until switched on again."]
    assert "research.endpoint.oa.enabled" not in project_settings(server, "switch")
    tab.once("dialog", lambda d: d.accept())
    tab.get_by_role("button", name="Save").click()
    expect(tab.locator("#settings-status")).to_have_text("Saved: 1 setting written.")
    assert project_settings(server, "switch")["research.endpoint.oa.enabled"] == "false"


def test_an_operator_tokens_page_says_whose_tokens_and_revoke_asks_first(tab, server, site):
    acme = role_token(site, "acme", "web", label="acme bot")
    globex = role_token(site, "globex", "crm", role="admin")
    sign_in(tab, server.token)
    # the banner's token acts on default/default but reaches every tenant: the header says so
    expect(tab.locator("#scope-label")).to_contain_text("tenant default · project default")
    expect(tab.locator("#scope-label .badge")).to_have_text("operator token: every tenant")
    tab.get_by_role("link", name="Tokens").click()
    heading = tab.locator("#tokens-list-title")
    expect(heading).to_have_text(re.compile(r"^Active tokens of every tenant \(an operator token\) \(\d+\)$"))
    for made in (acme, globex):
        row = tab.locator(f"table.tokens-list tr[data-token={made['id']}]")
        expect(row.locator("td").first).to_have_text(made["tenant"])  # the Tenant column
    tab.get_by_label("Show tenant").select_option("globex")
    rows = tab.locator("table.tokens-list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first.locator("td")).to_have_text(["globex", "crm", "admin", "", re.compile(".+"), "Revoke"])
    expect(tab.locator("table.tokens-list caption")).to_have_text("Tokens of tenant globex (1)")
    tab.get_by_label("Show tenant").select_option("")

    asked: list[str] = []
    tab.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    tab.get_by_role("button", name=f"Revoke {acme['id']}").click()
    expect(tab.locator("#tokens-status")).to_have_text(f"Nothing revoked; {acme['id']} still works.")
    assert asked == [
        f"Revoke {acme['id']} (user of acme/web, “acme bot”)? Whatever uses it is refused from now on; "
        "this cannot be undone."
    ]
    still = httpx.get(
        f"{server.url}/v1/research/providers", headers={"Authorization": f"Bearer {acme['token']}"}
    )
    assert still.status_code == 200
    tab.once("dialog", lambda d: d.accept())
    tab.get_by_role("button", name=f"Revoke {acme['id']}").click()
    expect(tab.locator("#tokens-status")).to_have_text(f"Revoked {acme['id']}.")
    gone = httpx.get(
        f"{server.url}/v1/research/providers", headers={"Authorization": f"Bearer {acme['token']}"}
    )
    assert gone.status_code == 401


def test_an_operator_names_whose_credentials_it_lists_and_writes(tab, server):
    sign_in(tab, server.token)
    tab.get_by_role("link", name="Credentials").click()
    tenant = tab.locator("#page-credentials").get_by_label("Tenant", exact=True)
    expect(tenant).to_have_value("default")  # the scope acted on, said where the keys go
    expect(tab.locator("#credentials-list-title")).to_have_text(re.compile(r"^Stored for tenant default "))
    tenant.fill("globex")
    tenant.press("Tab")  # a changed tenant: the list follows it
    expect(tab.locator("#credentials-list-title")).to_have_text("Stored for tenant globex (0)")
    form = tab.locator("#credentials-form")
    form.get_by_label("Credential name").fill("SERPER_API_KEY")
    form.get_by_label("Credential value").fill("serper-globex-1f2e3d")
    form.get_by_role("button", name="Save").click()
    expect(tab.locator("#credentials-status")).to_have_text("Stored SERPER_API_KEY for tenant globex.")
    row = tab.locator("table.credentials-list tbody tr")
    expect(row.locator("td").first).to_have_text("globex")
    headers = {"Authorization": f"Bearer {server.token}"}
    listed = {
        t: [
            c["name"]
            for c in httpx.get(f"{server.url}/v1/credentials", params={"tenant": t}, headers=headers).json()[
                "credentials"
            ]
        ]
        for t in ("globex", "default")
    }
    assert listed["globex"] == ["SERPER_API_KEY"] and "SERPER_API_KEY" not in listed["default"]


def test_routing_without_an_llm_is_a_hint_and_local_snippets_mark_their_terms(tab, server):
    sign_in(tab, server.token, project="docs")
    search(tab, "aurora fjord", "INTERNAL_DOC")
    snippet = tab.locator("ol.hits > li .snippet").first
    expect(snippet.locator("mark")).to_have_text(["aurora", "fjord"])
    assert "**" not in snippet.inner_text()
    tab.get_by_role("link", name="Routing").click()
    default = tab.locator("#llm-default")
    expect(default).to_have_text(
        "Default model: none configured. Investigate plans and judges with its built-in strategies; "
        "to use an LLM, set ai.default.provider and ai.default.model."
    )
    expect(default).to_have_class("hint")
    expect(tab.locator("#routing-view .error-text", has_text="ai.default")).to_have_count(0)


# ---- nothing cut: every table cell shows its text whole (or scrolls), every tick label is on its canvas ----

CUT_CELLS = """() => {
  const scrolls = (el) => {
    for (let box = el.parentElement; box; box = box.parentElement) {
      const style = getComputedStyle(box);
      if (["auto", "scroll"].includes(style.overflowX) && box.scrollWidth > box.clientWidth) return true;
      if (box.tagName === "MAIN") return false;
    }
    return false;
  };
  const cut = [];
  for (const cell of document.querySelectorAll("main table td, main table th")) {
    if (!cell.checkVisibility()) continue;
    const over = cell.scrollWidth > cell.clientWidth + 1;
    const table = cell.closest("table");
    const box = table.parentElement;
    const tableOut = table.getBoundingClientRect().right > box.getBoundingClientRect().right + 1 && !scrolls(table);
    if (over || tableOut) cut.push(`${table.className || "table"}: ${cell.textContent.trim().slice(0, 40)}`);
  }
  return cut;
}"""

CLIPPED_TICKS = """() => {
  const out = [];
  for (const plot of document.querySelectorAll(".chart-plot")) {
    const u = plot.uplotChart;
    if (!u) { out.push(`${plot.closest("figure").id}: no chart`); continue; }
    const canvas = u.ctx.canvas.getBoundingClientRect();
    const ratio = devicePixelRatio;
    u.axes.forEach((axis, i) => {
      u.ctx.font = axis.font[0];
      const scale = i === 0 ? "x" : "y";
      (axis._values || []).forEach((label, k) => {
        const width = u.ctx.measureText(String(label)).width / ratio;
        const at = u.valToPos(axis._splits[k], scale);  // CSS px inside the plotting area
        if (i === 0) {
          const centre = u.bbox.left / ratio + at;
          if (centre - width / 2 < 0 || centre + width / 2 > canvas.width) out.push(`${plot.closest("figure").id} x ${label}`);
        } else {
          const right = u.bbox.left / ratio - axis.ticks.size - axis.gap;
          if (right - width < 0) out.push(`${plot.closest("figure").id} y ${label}`);
        }
      });
    });
  }
  return out;
}"""


WIDER_THAN_BOX = """(selector) => [...document.querySelectorAll(selector)]
  .filter((t) => t.getBoundingClientRect().width > t.parentElement.clientWidth + 1)
  .map((t) => `${t.className} is ${Math.round(t.getBoundingClientRect().width)} px in a ${t.parentElement.clientWidth} px box`)"""


@pytest.mark.parametrize("width", [1280, 390])
def test_no_table_cuts_its_text_and_no_chart_clips_its_labels(tab, server, site, width):
    record_slow_calls(site, f"wide{width}")
    tab.set_viewport_size({"width": width, "height": 900})
    sign_in(tab, server.token, project=f"wide{width}")
    search(tab, "aurora", "ENCYCLOPEDIA")  # down answers a long error: Routing's Last error
    cut: dict[str, list[str]] = {}
    for name, ready in [
        ("search", "table.attempts"),
        ("routing", "table.providers"),
        ("usage", "#chart-p95 canvas"),
        ("settings", "details.instance"),
        ("tokens", "table.tokens-list"),
        ("credentials", "#credentials-view h2"),
        ("models", "table.models"),
    ]:
        tab.locator(f"#nav a[data-page={name}]").click()
        expect(tab.locator(ready).first).to_be_visible()
        if name == "routing":
            expect(tab.locator("table.providers tr[data-instance=down] td").last).to_contain_text(
                "re-indexed"
            )
        if name == "usage":
            for figure in ("chart-calls", "chart-p95"):
                expect(tab.locator(f"#{figure} canvas")).to_have_count(1)
            assert tab.evaluate(CLIPPED_TICKS) == []
            y_labels = tab.evaluate(
                "document.querySelector('#chart-p95 .chart-plot').uplotChart.axes[1]._values"
            )
            # five-digit labels ("12,000 ms"), the kind a fixed-width axis cut to ",000 ms"
            assert any(re.fullmatch(r"\d{2},\d{3} ms", str(v)) for v in y_labels), y_labels
        found = tab.evaluate(CUT_CELLS)
        if width == 1280 and name in ("routing", "models"):  # these fit a laptop: no sideways scroll
            found += tab.evaluate(WIDER_THAN_BOX, "table.providers, table.models")
        if found:
            cut[name] = found
    assert cut == {}

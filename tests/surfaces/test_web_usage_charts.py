"""The Usage page's charts (uPlot, vendored) and quota bars in headless Chromium, after real searches.

The server, emulator and browser are test_web_browser.py's (imported: one more module-scoped
server); `flaky` answers 503, so the fallback `wiki` serves the encyclopedia searches.
"""

from __future__ import annotations

import re

from . import test_web_browser as web
from .test_web_browser import expect, llm_call, record_llm_calls, search, sign_in

# the fixtures of the browser tests, shared by name
browser, page, server, site = web.browser, web.page, web.server, web.site

SUMMARY = re.compile(
    r"per hour, \d{4}-\d\d-\d\d \d\d:00 to \d{4}-\d\d-\d\d \d\d:\d\d UTC: wiki 2 calls, 0 failures; flaky 1 call, 1 failure\."
)


def legend(page, chart: str) -> list[str]:
    return [t.strip() for t in page.locator(f"#{chart} .chart-legend li").all_inner_texts()]


def column_sum(page, chart: str, column: int) -> int:
    cells = page.locator(f"#{chart} .chart-data tbody tr td:nth-child({column})").all_inner_texts()
    return sum(int(c.replace(",", "")) for c in cells if c.strip() not in ("", "—"))


def test_usage_charts_after_searches_with_one_failing_provider(page, server, site):
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    record_llm_calls(
        site, llm_call("charts", "mike", 12, 29, 0.000471), llm_call("charts", "ann", 100, 400, None)
    )
    sign_in(page, server.token, project="charts", tenant="acme")
    search(page, "aurora", "ENCYCLOPEDIA")  # flaky fails (503), wiki answers
    search(page, "borealis", "ENCYCLOPEDIA")  # flaky cools down: only wiki is called
    page.get_by_role("link", name="Usage").click()

    calls = page.locator("#chart-calls")
    expect(calls.locator("canvas")).to_have_count(1)
    assert legend(page, "chart-calls") == ["wiki calls", "wiki failures", "flaky calls", "flaky failures"]
    expect(calls.locator(".chart-summary")).to_have_text(SUMMARY)
    plot_name = calls.locator(".chart-plot").get_attribute("aria-label") or ""
    assert plot_name.startswith("Provider calls and failures per hour by instance. ") and SUMMARY.search(
        plot_name
    )
    # every point as a table: one row per hour of the window, the counts in their columns
    calls.get_by_text("Show as table").click()
    rows = calls.locator(".chart-data tbody tr")
    assert 25 <= rows.count() <= 26  # 24 h back, rounded down to the hour, up to now
    assert [column_sum(page, "chart-calls", c) for c in (2, 3, 4, 5)] == [2, 0, 1, 1]
    assert calls.locator(".chart-data thead th").all_inner_texts() == [
        "Time (UTC)", "wiki calls", "wiki failures", "flaky calls", "flaky failures",
    ]  # fmt: skip

    p95 = page.locator("#chart-p95")
    expect(p95.locator("canvas")).to_have_count(1)
    assert legend(page, "chart-p95") == ["wiki p95", "flaky p95"]
    expect(p95.locator(".chart-summary")).to_contain_text("wiki ")
    expect(p95.locator(".chart-summary")).to_contain_text(
        re.compile(r"flaky \d[\d,]* ms over the window, worst \d")
    )

    tokens = page.locator("#chart-tokens")
    expect(tokens.locator("canvas")).to_have_count(1)
    assert legend(page, "chart-tokens") == ["charts"]
    expect(tokens.locator(".chart-summary")).to_contain_text("charts 541 tokens (112 in, 429 out)")
    expect(page.locator("#chart-cost .chart-summary")).to_contain_text("charts $0.0005 (+1 unpriced call)")

    # the provider quota (oa: 50 a day) as a bar with the thresholds marked and said in words
    oa = page.locator("table.provider-quotas tbody tr", has=page.locator("code", has_text=re.compile("^oa$")))
    meter = oa.get_by_role("meter", name="quota of oa")
    assert [t.get_attribute("data-threshold") for t in meter.locator(".qbar-tick").all()] == [
        "80",
        "95",
        "100",
    ]
    assert re.fullmatch(
        r"\d+ / 50 per day, \d+(\.\d)? %, below the 80 % mark; marks at 80, 95, 100 %",
        meter.get_attribute("aria-valuetext") or "",
    )
    expect(oa.locator(".qbar-marks")).to_have_text("marks at 80 % · 95 % · 100 %")
    web.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(web.ARTIFACTS / "usage-charts-1366.png"), full_page=True)
    page.screenshot(path="/tmp/usage-charts.png", full_page=True)

    # switching the bucket to day reloads: two days (yesterday's and today's buckets)
    page.get_by_label("Chart by").select_option("day")
    expect(calls.locator(".chart-summary")).to_contain_text("per day, ")
    expect(calls.locator(".chart-summary")).to_contain_text(
        "wiki 2 calls, 0 failures; flaky 1 call, 1 failure."
    )
    calls.get_by_text("Show as table").click()
    expect(calls.locator(".chart-data tbody tr")).to_have_count(2)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", calls.locator(".chart-data tbody tr td").first.inner_text())
    expect(page.locator("#chart-tokens .chart-title")).to_have_text("LLM tokens per day by project")

    # and the LLM charts per model, then per account
    page.get_by_label("LLM charts per").select_option("model")
    expect(page.locator("#chart-tokens .chart-title")).to_have_text("LLM tokens per day by model")
    assert legend(page, "chart-tokens") == ["anthropic / claude-sonnet-4-5"]
    page.get_by_label("LLM charts per").select_option("account")
    expect(page.locator("#chart-tokens .chart-title")).to_have_text("LLM tokens per day by account")
    assert legend(page, "chart-tokens") == ["ann", "mike"]
    expect(page.locator("#chart-tokens .chart-summary")).to_contain_text(
        "ann 500 tokens (100 in, 400 out); mike 41 tokens"
    )

    # the calls per modality: both encyclopedia searches' three calls in one series
    page.get_by_label("Calls charts per").select_option("modality")
    expect(calls.locator(".chart-title")).to_have_text("Provider calls and failures per day by modality")
    expect(calls.locator(".chart-summary")).to_contain_text("ENCYCLOPEDIA 3 calls, 1 failure.")
    assert legend(page, "chart-calls") == ["ENCYCLOPEDIA calls", "ENCYCLOPEDIA failures"]
    # charts until an hour ago: the searches just made are outside the window, the tables still count them
    page.get_by_label("Charts until").fill("1h")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#page-usage")).to_contain_text("No provider calls to chart per day, ")
    expect(page.locator("#chart-calls")).to_have_count(0)
    expect(page.locator("table.usage tfoot")).to_contain_text("3")
    page.get_by_label("Charts until").fill("")
    page.get_by_label("Calls charts per").select_option("instance")
    expect(calls.locator(".chart-title")).to_have_text("Provider calls and failures per day by instance")
    assert [p for p in problems if "Content Security Policy" in p or "Refused" in p] == []
    assert problems == []

    # too many points: one message naming the field, the field marked
    page.get_by_label("Chart by").select_option("hour")
    page.get_by_label("Since").fill("100d")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#usage-error")).to_have_text(
        re.compile(
            r"^since: 240[01] hour buckets from \S+ is more than 2000: use bucket=day or a later since$"
        )
    )
    expect(page.get_by_label("Since")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#chart-calls")).to_have_count(0)
    page.get_by_label("Chart by").select_option("day")  # reloads: 101 days are fine
    expect(page.locator("#chart-calls .chart-summary")).to_contain_text("per day, ")
    expect(page.locator("#usage-error")).to_be_hidden()

    # a window end it cannot read: the field named and marked, nothing charted
    page.get_by_label("Charts until").fill("soon")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#usage-error")).to_have_text(re.compile(r"^until: "))
    expect(page.get_by_label("Charts until")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#chart-calls")).to_have_count(0)


def test_charts_fit_a_phone_resize_with_their_box_and_follow_the_theme(page, server):
    sign_in(page, server.token, project="charts-phone")
    search(page, "aurora", "ENCYCLOPEDIA")
    page.get_by_role("link", name="Usage").click()
    canvas = page.locator("#chart-calls canvas")
    expect(canvas).to_have_count(1)
    box = page.locator("#chart-calls .chart-plot")
    wide = page.evaluate("document.querySelector('#chart-calls canvas').getBoundingClientRect().width")
    assert abs(wide - box.bounding_box()["width"]) <= 1
    page.set_viewport_size({"width": 390, "height": 900})
    page.wait_for_function(
        "() => { const c = document.querySelector('#chart-calls canvas'), b = document.querySelector('#chart-calls .chart-plot');"
        " return Math.abs(c.getBoundingClientRect().width - b.getBoundingClientRect().width) <= 1; }"
    )
    narrow = page.evaluate("document.querySelector('#chart-calls canvas').getBoundingClientRect().width")
    assert narrow < 390 < wide
    assert page.evaluate("document.documentElement.scrollWidth") == 390

    def first_swatch() -> str:
        return page.evaluate(
            "getComputedStyle(document.querySelector('#chart-calls .chart-swatch')).borderTopColor"
        )

    page.emulate_media(color_scheme="light")
    page.locator("#usage-form button[type=submit]").click()
    expect(page.locator("#usage-status")).to_contain_text("Updated")
    assert first_swatch() == "rgb(31, 95, 191)"  # --chart-1, light
    for _ in range(3):  # system → light → dark: the theme button's cycle
        if page.evaluate("document.documentElement.dataset.theme") == "dark":
            break
        page.locator("#theme").click()
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    expect(canvas).to_have_count(1)  # drawn again with the dark colours
    assert first_swatch() == "rgb(138, 180, 248)"  # --chart-1, dark
    web.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(web.ARTIFACTS / "usage-charts-dark-390.png"), full_page=True)
    # axe with every chart's table open, in both themes
    if web.AXE.exists():
        for table in page.locator(".chart-data summary").all():
            table.click()
        assert page.locator(".chart-data[open]").count() == 2  # the LLM charts: no calls in this project
        assert web.axe_violations(page) == []
        page.locator("#theme").click()  # dark → system (light, as emulated)
        expect(canvas).to_have_count(1)
        for table in page.locator(".chart-data summary").all():
            table.click()
        assert web.axe_violations(page) == []


def test_a_quota_bar_says_which_threshold_was_passed(page, server):
    sign_in(page, server.token, project="charts-bars")
    states = page.evaluate(
        """async () => {
            const { quotaBar } = await import("/ui/pages/usage.js");
            return [10, 40, 48, 50, 61].map((used) => {
                const bar = quotaBar(used, 50, { label: "q", per: "day" });
                const fill = bar.querySelector(".qbar-fill").style.width;
                return [bar.className, bar.querySelector(".qbar-text").textContent, fill];
            });
        }"""
    )
    assert states == [
        ["qbar qbar-ok", "10 / 50 per day · 20 %", "20%"],
        ["qbar qbar-warn", "40 / 50 per day · 80 % · past the 80 % mark", "80%"],
        ["qbar qbar-high", "48 / 50 per day · 96 % · past the 95 % mark", "96%"],
        ["qbar qbar-full", "50 / 50 per day · 100 % · at the limit", "100%"],
        ["qbar qbar-full", "61 / 50 per day · 122 % · over the limit", "100%"],
    ]
    own = page.evaluate(
        """async () => {
            const { quotaBar } = await import("/ui/pages/usage.js");
            const bar = quotaBar(70, 100, { label: "q", thresholds: [50, 75, 90] });
            return [...bar.querySelectorAll(".qbar-tick")].map((t) => t.style.left).concat(bar.className);
        }"""
    )
    assert own == ["50%", "75%", "90%", "qbar qbar-warn"]

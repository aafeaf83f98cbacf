# ruff: noqa: F811 - the `browser` and `page` fixtures of test_web_browser.py are imported by name
"""The console's search experience in headless Chromium (issue 14): the rich view, "Load content" on
hits, investigate with live steps, and a tenant-level private `baseUrl` refused on the Settings page.

A server of its own, on an emulator whose SearXNG answers WEB, IMAGE and VIDEO and fails NEWS, whose
OpenAlex is slow (so the investigation's steps are seen arriving before its result), and — where
`../shared/fixtures` holds the recorded NCBI bodies — a PubMed whose abstracts load on demand. The
browser, the tab fixture and the helpers are those of `test_web_browser.py`.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable, Iterator
from urllib.parse import quote

import httpx
import pytest

from ..support.bodies import openalex_works, wikipedia_pages
from ..support.emulator import Emulator, RecordedRequest, Reply
from ..support.paths import shared_fixtures
from ..support.providers_academic import add_pubmed
from ..support.runtime import endpoint, only, write_config
from ..support.served import Served, served
from ..support.site import Site
from .test_web_browser import (  # noqa: F401 - fixtures are found by name
    ARTIFACTS,
    AXE,
    CONTROLS,
    axe_violations,
    browser,
    expect,
    instance_form,
    page,
    search,
    sign_in,
)

# its module-scoped server is set up once: the module's tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)

WIKI = "/w/rest.php/v1/search/page"
SLOW_SECONDS = 4.0


def searxng(site: str) -> Callable[[RecordedRequest], Reply]:
    """WEB, IMAGE and VIDEO answers by category; NEWS fails with a 503. Every page, image and
    thumbnail URL is on the loopback `site`: loading one is refused by the SSRF guard, and no test
    ever makes the server resolve or reach another host."""

    def route(request: RecordedRequest) -> Reply:
        category = request.param("categories")
        if category == "news":
            return Reply(status=503)
        results = _results(site, category)
        pageno = int(request.param("pageno") or 1)
        if pageno > 1:  # a next page (issue 47's "More results"): its own hits
            results = [
                {**r, "url": f"{r['url']}?p={pageno}", "title": f"{r['title']} (p{pageno})"} for r in results
            ]
        return Reply.json({"query": request.param("q"), "results": results})

    return route


def _results(site: str, category: str | None) -> list[dict[str, object]]:
    if category == "images":
        return [
            {
                "url": f"{site}/gallery/{i}",
                "title": f"Aurora photo {i}",
                "img_src": f"{site}/img/aurora-{i}.jpg",
                "thumbnail_src": f"{site}/img/aurora-{i}-thumb.jpg",
                "resolution": "1920 x 1080",
            }
            for i in (1, 2, 3)
        ]
    if category == "videos":
        return [
            {
                "url": f"{site}/watch/1",
                "title": "Aurora timelapse",
                "content": "Four hours in forty seconds",
                "length": 95,
                "author": "Sky channel",
                "thumbnail": f"{site}/img/timelapse.jpg",
            }
        ]
    return [
        {"url": f"{site}/aurora/{i}", "title": f"Aurora page {i}", "content": f"Page {i} text"}
        for i in (1, 2)
    ]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    directory = tmp_path_factory.mktemp("web-search")
    emulator = Emulator().start()
    emulator.add("/sx/search", searxng(emulator.url))
    emulator.add(f"/w{WIKI}", Reply.json(wikipedia_pages("Aurora", "Aurora borealis", "Banana bread")))
    emulator.add("/slow/works", Reply.json(openalex_works(2, "Aurora study"), delay=SLOW_SECONDS))
    settings = {
        **only(),
        **endpoint("sx", "searxng", f"{emulator.url}/sx"),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/w"),
        **endpoint("slowoa", "openalex", f"{emulator.url}/slow"),
        "research.default.web": "sx",
        "research.fallback.web": "wiki",
        "research.default.academic": "slowoa",
        "research.cache.ttlSeconds": 0,
        "research.cache.ttlSeconds.academic": 0,
        "research.cache.ttlSeconds.encyclopedia": 0,
        "research.cache.ttlSeconds.news": 0,
        "research.investigate.minHits": 1,  # one wave: no refinement round
    }
    if shared_fixtures() is not None:
        settings.update(endpoint("pubmed", "pubmed", add_pubmed(emulator), enabled=True))
    try:
        yield Site(write_config(directory, {"settings": settings}), directory / "home", emulator)
    finally:
        emulator.stop()


@pytest.fixture(scope="module")
def server(site) -> Iterator[Served]:
    with served(site.config, site.home) as running:
        assert running.token is not None
        yield running


def shot(page, name: str) -> None:
    """A full-page screenshot kept as a test artifact (git-ignored), beside the every-page ones."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def rich_search(page, query: str) -> None:
    search(page, query, "rich")
    expect(page.locator(".rich-section")).to_have_count(4)


# ---- the rich view ---------------------------------------------------------------------------------


def test_the_rich_view_shows_every_modality_with_its_provider_trail_and_errors(page, server, site):
    sign_in(page, server.token, project="rich")
    rich_search(page, "aurora rich")
    assert page.url == f"{server.url}/#/search?q=aurora+rich&m=rich"
    sections = page.locator(".rich-section")
    expect(sections.locator("h2")).to_have_text(["Web", "Images", "Videos", "News"])
    expect(page.locator("#search-results > .summary")).to_have_text(
        "6 hits · rich view: WEB, IMAGE, VIDEO, NEWS · up to 10 per modality"
    )
    web = page.locator(".rich-section[data-modality=WEB]")
    expect(web.locator(".rich-summary")).to_have_text("2 hits from sx")
    expect(web.locator("ol.hits > li h3")).to_have_text(["Aurora page 1", "Aurora page 2"])
    images = page.locator(".rich-section[data-modality=IMAGE]")
    expect(images.locator("ul.thumbs > li")).to_have_count(3)
    expect(images.locator(".thumb-title")).to_have_text(
        ["Aurora photo 1", "Aurora photo 2", "Aurora photo 3"]
    )
    sources = images.locator("img.thumb").evaluate_all("imgs => imgs.map((i) => i.getAttribute('src'))")
    assert len(sources) == 3
    for i, src in enumerate(sources, 1):  # the signed image proxy of this server, never the image host
        target = quote(f"{site.emulator.url}/img/aurora-{i}-thumb.jpg", safe="")
        assert re.fullmatch(rf"/v1/image\?url={re.escape(target)}&sig=[0-9a-f]{{32}}", src), src
    # signed by this server, and still refused by the SSRF guard: the thumbnail's host is loopback
    proxied = httpx.get(server.url + sources[0], timeout=60)
    assert proxied.status_code == 403
    assert "127.0.0.1 is a loopback address" in proxied.json()["error"]["message"]
    assert site.emulator.requests("/img/aurora-1-thumb.jpg") == []
    # an image the proxy did not bring shows a placeholder, not a broken-image glyph (issue 46)
    expect(images.locator(".no-thumb")).to_have_text(["no preview"] * 3)
    expect(images.locator("img.thumb:visible")).to_have_count(0)
    video = page.locator(".rich-section[data-modality=VIDEO] ol.hits > li")
    expect(video.locator("h3")).to_have_text("Aurora timelapse")
    expect(video.locator("dl.extras")).to_contain_text("ChannelSky channel")
    expect(video.locator("dl.extras")).to_contain_text("Duration1:35")
    expect(video.locator("img.thumb")).to_have_attribute("src", re.compile(r"^/v1/image\?url=.*timelapse"))
    news = page.locator(".rich-section[data-modality=NEWS]")
    expect(news.locator(".rich-summary")).to_have_text("0 hits — no provider answered")
    expect(news.locator(".warn-box")).to_contain_text("No provider answered: ")
    expect(news.locator(".warn-box")).to_contain_text("HTTP 503")
    trail = news.locator("details.trail")
    expect(trail.locator("summary")).to_have_text("Attempts (1) — 1 failed")
    expect(trail.locator("table.attempts")).to_be_hidden()  # collapsed until asked for
    trail.locator("summary").click()
    rows = news.locator("table.attempts tbody tr")
    expect(rows.locator("td").nth(1)).to_have_text("sx")
    expect(rows.locator("td").nth(2)).to_have_text("hard_error")
    expect(page.locator("#search-status")).to_have_text(
        "6 hits across 4 modalities; no provider answered NEWS."
    )
    shot(page, "rich-1280")


def test_a_rich_url_is_shareable_and_fits_a_phone(page, server):
    sign_in(page, server.token, project="rich-share")
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto(f"{server.url}/#/search?q=aurora+shared&m=rich")
    page.reload()  # opened afresh, as a shared link is (the tab's session survives)
    expect(page.locator(".rich-section")).to_have_count(4)
    expect(page.get_by_label("Query")).to_have_value("aurora shared")
    expect(page.get_by_label("Modality", exact=True)).to_have_value("rich")
    expect(page.locator(".rich-section[data-modality=WEB] ol.hits > li")).to_have_count(2)
    page.locator(".rich-section[data-modality=NEWS] details.trail summary").click()
    assert page.evaluate("document.documentElement.scrollWidth") == 390
    columns = page.evaluate(
        "getComputedStyle(document.querySelector('ul.thumbs')).gridTemplateColumns.split(' ').length"
    )
    assert columns == 2  # the thumbnails wrap into a grid that fits
    shot(page, "rich-390")


# ---- load content --------------------------------------------------------------------------------


def test_load_content_of_a_loopback_hit_is_refused_with_a_clear_message(page, server):
    sign_in(page, server.token, project="content-refused")
    search(page, "aurora", "ENCYCLOPEDIA")
    hit = page.locator("ol.hits > li").first
    button = hit.get_by_role("button", name="Load content of Aurora")
    expect(button).to_have_text("Load content")
    button.click()
    message = hit.locator(".loaded [role=alert]")
    expect(message).to_have_text(
        re.compile(
            r"^Could not load the content: url: http://127\.0\.0\.1:\d+/w/wiki/Aurora refused: "
            r"127\.0\.0\.1 is a loopback address; content is only fetched from public addresses"
        )
    )
    expect(button).to_be_focused()  # the keyboard stays where it was
    expect(page.locator("#search-results ol.hits > li")).to_have_count(3)  # the results stay


def test_load_content_shows_a_pubmed_abstract_as_text_under_its_hit(page, server, site):
    if shared_fixtures() is None:
        pytest.skip("../shared/fixtures is absent: the recorded PubMed bodies are not available here")
    sign_in(page, server.token, project="content")
    page.get_by_text("Expert options").click()
    page.get_by_label("Pinned provider").select_option("pubmed")
    search(page, "cryopreservation", "ACADEMIC")
    hit = page.locator("ol.hits > li").first
    expect(hit.locator("h3")).to_have_text("Zirconium granuloma following treatment of rhus dermatitis.")
    hit.get_by_role(
        "button", name="Load content of Zirconium granuloma following treatment of rhus dermatitis."
    ).click()
    loaded = hit.locator("details.loaded-content")
    expect(loaded).to_have_attribute("open", "")
    expect(loaded.locator("summary")).to_have_text(re.compile(r"^Content \(text/plain · [\d,]+ bytes\)$"))
    text = loaded.get_by_role("region", name=re.compile("^Content of "))
    expect(text).to_contain_text("Is cryopreservation a homogeneous process?")
    expect(text.locator("*:not(pre)")).to_have_count(0)  # text only: nothing of the body became markup
    loaded.locator("summary").click()
    expect(text).to_be_hidden()  # collapsible
    loaded.locator("summary").click()
    expect(text).to_be_visible()
    # the hit's STASH_ON_DEMAND reference went through its provider (efetch), not its URL
    assert [r.param("id") for r in site.emulator.requests("/pubmed/efetch.fcgi")] == ["11850928"]
    saved = list((site.home / "workspace" / "default" / "content" / "content").glob("*.txt"))
    assert len(saved) == 1 and saved[0].read_text().startswith("Is cryopreservation a homogeneous process?")
    if AXE.exists():
        assert axe_violations(page) == []
    page.set_viewport_size({"width": 390, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth") == 390
    shot(page, "content-390")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_on_the_rich_view_and_a_refused_load(page, server, scheme):
    if not AXE.exists():
        pytest.skip(f"{AXE} is absent (tests/support/axe/README.md says how to vendor it)")
    page.emulate_media(color_scheme=scheme)
    sign_in(page, server.token, project=f"rich-axe-{scheme}")
    rich_search(page, "aurora axe")
    page.locator(".rich-section[data-modality=NEWS] details.trail summary").click()
    web = page.locator(".rich-section[data-modality=WEB] ol.hits > li").first
    web.get_by_role("button", name="Load content of Aurora page 1").click()
    expect(web.locator(".loaded [role=alert]")).to_contain_text("Could not load the content")
    assert axe_violations(page) == []


def test_every_control_of_the_rich_view_is_reachable_by_tab(page, server):
    sign_in(page, server.token, project="rich-keys")
    rich_search(page, "aurora keys")
    page.locator(".rich-section[data-modality=NEWS] details.trail summary").click()
    total = page.evaluate(CONTROLS)
    assert total > 20  # the form, 6 hit links and their Load content buttons, 4 trails, a table box
    page.evaluate("document.activeElement && document.activeElement.blur()")
    reached = set()
    for _ in range(total + 3):
        page.keyboard.press("Tab")
        reached.add(page.evaluate("document.activeElement?.dataset?.kb ?? null"))
    assert {str(i) for i in range(total)} - reached == set()
    # and Load content works from the keyboard
    button = page.get_by_role("button", name="Load content of Aurora timelapse")
    button.focus()
    page.keyboard.press("Enter")
    expect(page.locator(".rich-section[data-modality=VIDEO] .loaded [role=alert]")).to_contain_text(
        "Could not load the content: "
    )


# ---- investigate with live steps -----------------------------------------------------------------


def test_investigate_shows_its_steps_as_they_arrive_then_the_result(page, server):
    sign_in(page, server.token, project="live")
    page.get_by_role("link", name="Investigate").click()
    page.get_by_label("Question").fill("what causes the aurora")
    page.get_by_role("button", name="Investigate").click()
    results = page.locator("#investigate-results")
    steps = page.locator("#investigate-steps")
    expect(steps).to_have_attribute("aria-live", "polite")
    # the plan and the fast searches arrive while OpenAlex still takes its 4 s: no result yet
    expect(steps.locator("li[data-step=plan]")).to_have_count(1)
    expect(steps.locator("li[data-step=search]").first).to_be_visible()
    assert results.locator(".summary").count() == 0
    assert steps.locator("li[data-step=evaluate]").count() == 0
    progress = page.locator(".live-steps progress")
    expect(progress).to_have_attribute("max", "8")  # plan + 4 searches + dedup + evaluate + insights
    assert 1 <= int(progress.get_attribute("value")) < 8
    shot(page, "investigate-live-1280")
    expect(results.locator(".summary")).to_contain_text("plan: heuristic · evaluate: lexical", timeout=20_000)
    names = steps.locator("li").evaluate_all("items => items.map((li) => li.dataset.step)")
    searches = names.count("search")
    assert searches >= 2
    assert names == ["plan", *["search"] * searches, "dedup", "evaluate", "insights"]
    messages = steps.locator("li[data-step=search] .step-message").all_text_contents()
    academic = [m for m in messages if "ACADEMIC" in m]
    assert academic == [f"{searches}/{searches}: ACADEMIC via slowoa, 2 hits"]  # the slow one, last
    first = steps.locator("li[data-step=search]").first
    expect(first).to_have_text(re.compile(r"^search 1/\d: [A-Z]+ via .+, \d+ hits — “.+”$"))
    expect(steps.locator("li[data-step=plan] .step-message")).to_have_text(
        f"planned {searches} searches (heuristic)"
    )
    # the final view as without the stream, the steps kept (closed) below it
    expect(results.locator("ol.hits > li").first.locator(".score")).to_be_visible()
    log = results.locator("details.steps-log")
    expect(log.locator("summary")).to_have_text(f"Steps ({len(names)})")
    expect(steps).not_to_have_attribute("aria-live", "polite")


def test_investigate_falls_back_to_the_json_answer_when_the_stream_fails(page, server):
    streamed = []

    def no_stream(route) -> None:
        if "text/event-stream" in (route.request.headers.get("accept") or ""):
            streamed.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.route("**/v1/research/investigate*", no_stream)
    sign_in(page, server.token, project="fallback")
    page.get_by_role("link", name="Investigate").click()
    page.get_by_label("Question").fill("what causes the aurora")
    page.get_by_role("button", name="Investigate").click()
    results = page.locator("#investigate-results")
    expect(results.locator(".summary")).to_contain_text("plan: heuristic · evaluate: lexical", timeout=20_000)
    assert len(streamed) == 1
    expect(results.locator("details.steps-log li.step-note")).to_have_text(
        "Live steps are unavailable (the stream could not be opened); waiting for the whole answer."
    )
    expect(results.locator("ol.hits > li").first.locator(".score")).to_be_visible()


def test_an_investigation_run_as_a_task_survives_a_reload(page, server):
    """Issue 45: "Run as a task" starts it with `Prefer: respond-async`; the page lists it, and a
    reload while OpenAlex still takes its 4 s follows it again to its answer."""
    sign_in(page, server.token, project="tasks")
    page.get_by_role("link", name="Investigate").click()
    expect(page.locator("#investigate-tasks")).to_have_text("No tasks yet.")
    page.get_by_label("Question").fill("what causes the aurora")
    page.get_by_label("Run as a task").check()
    page.get_by_role("button", name="Investigate").click()
    rows = page.locator("#investigate-tasks tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("working")
    task_id = page.evaluate("sessionStorage.getItem('zarniwoop.investigateTask')")
    assert task_id and rows.first.locator("code").inner_text() == task_id[:8]
    page.reload()
    results = page.locator("#investigate-results")
    expect(results.locator(".summary")).to_contain_text("plan: heuristic · evaluate: lexical", timeout=20_000)
    expect(results.locator("ol.hits > li").first.locator(".score")).to_be_visible()
    expect(rows.first).to_contain_text("completed")
    assert page.evaluate("sessionStorage.getItem('zarniwoop.investigateTask')") is None
    # its answer again from the list, after the view moved on
    page.get_by_role("button", name=f"Show task {task_id[:8]}").click()
    expect(results.locator(".summary")).to_contain_text("plan: heuristic · evaluate: lexical")


def test_investigate_refusals_name_the_field_without_a_fallback(page, server):
    sign_in(page, server.token, project="live-errors")
    page.get_by_role("link", name="Investigate").click()
    page.get_by_label("Question").fill("aurora")
    page.locator("#page-investigate").get_by_label("Max results").fill("500")
    page.get_by_role("button", name="Investigate").click()
    expect(page.locator("#investigate-error")).to_have_text(re.compile(r"^maxResults: .*100"))
    expect(page.locator("#page-investigate").get_by_label("Max results")).to_have_attribute(
        "aria-invalid", "true"
    )
    expect(page.locator("#investigate-results li.step-note")).to_have_count(0)


def test_investigate_names_a_fallback_reason_once(page, server):
    """Four steps that fell back for one reason said it four times in the summary (issue 46)."""
    sign_in(page, server.token, project="strategies")
    line = page.evaluate(
        """async () => (await import("/ui/core.js")).strategyLine({
            plan: "heuristic (fallback: LLM answer not valid JSON)",
            evaluate: "lexical (fallback: LLM answer not valid JSON)",
            rerank: "off",
            insights: "extractive (fallback: HTTP 500)",
            refine: "heuristic (fallback: LLM answer not valid JSON)",
        })"""
    )
    assert line == (
        "plan: heuristic · evaluate: lexical · rerank: off · insights: extractive · refine: heuristic "
        "(plan, evaluate, refine fell back: LLM answer not valid JSON; insights fell back: HTTP 500)"
    )
    assert line.count("not valid JSON") == 1


# ---- settings: a tenant-level private baseUrl --------------------------------------------------


def test_settings_a_tenant_level_private_base_url_is_refused_and_nothing_written(page, server):
    sign_in(page, server.token, tenant="tlevel", project="p")
    page.get_by_role("link", name="Settings").click()
    expect(page.locator("#settings-status")).to_contain_text("project p")
    page.get_by_label("Level").select_option("tenant")
    page.get_by_role("button", name="Load").click()
    expect(page.locator("#settings-status")).to_have_text(
        "Settings of tenant level (tenant tlevel, project _tenant)."
    )
    rate = instance_form(page, "slowoa").get_by_label("Requests per second")
    rate.fill("5")  # a good value, in the same batch
    base = instance_form(page, "wiki").get_by_label("Base URL")
    base.fill("http://10.1.2.3/w")
    with page.expect_response(lambda r: "/v1/settings?" in r.url and r.request.method == "PUT") as put:
        page.get_by_role("button", name="Save").click()
    answer = put.value
    assert answer.status == 422
    assert answer.json() == {
        "error": {
            "field": "research.endpoint.wiki.baseUrl",
            "message": "research.endpoint.wiki.baseUrl: 10.1.2.3 is not a public address (private); set "
            "research.allowPrivateEndpoints: true at system level to allow it (a tenant-level endpoint URL)",
        }
    }
    expect(page.locator("#settings-error")).to_contain_text("research.endpoint.wiki.baseUrl: 10.1.2.3 is not")
    expect(base).to_have_attribute("aria-invalid", "true")
    expect(base).to_be_focused()
    expect(base).to_have_value("http://10.1.2.3/w")  # the form keeps what was typed
    held = httpx.get(
        f"{server.url}/v1/settings",
        params={"level": "tenant", "tenant": "tlevel", "project": "p"},
        headers={"Authorization": f"Bearer {server.token}"},
        timeout=60,
    ).json()
    rows = {row["key"]: row for row in held["settings"]}
    assert rows["research.endpoint.wiki.baseUrl"]["level"] == "system"  # still the operator's URL
    assert rows["research.endpoint.wiki.baseUrl"]["value"].startswith("http://127.0.0.1:")
    rate_row = rows.get("research.endpoint.slowoa.rateLimit.perSecond")
    assert rate_row is None or rate_row["level"] != "tenant"  # the good half was not written either
    tenant_rows = [key for key, row in rows.items() if row["level"] == "tenant"]
    assert tenant_rows == []


def png(width: int, height: int) -> bytes:
    """A real PNG of `width` × `height` grey pixels: the browser decodes it, so its size is observable."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80\x80\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def test_an_image_result_renders_as_a_thumbnail_through_the_proxy(browser, tmp_path):
    """The operator lets the fetcher reach private addresses (the loopback emulator stands in for an
    image host), so the proxy serves the thumbnails: the browser decodes each one from this origin."""
    emulator = Emulator().start()
    try:
        for i in (1, 2, 3):
            emulator.add(
                f"/img/aurora-{i}-thumb.jpg", Reply(body=png(6 + i, 4), headers={"Content-Type": "image/png"})
            )
        emulator.add("/sx/search", searxng(emulator.url))
        settings = {
            **only(),
            **endpoint("sx", "searxng", f"{emulator.url}/sx"),
            "research.default.image": "sx",
            "research.content.allowPrivate": True,
        }
        with served(write_config(tmp_path, {"settings": settings}), tmp_path / "home") as running:
            page = browser.new_page()  # a server of its own: not the `page` fixture's
            requested: list[str] = []
            page.on("request", lambda request: requested.append(request.url))
            page.goto(running.url + "/")
            sign_in(page, running.token, project="thumbs")
            search(page, "aurora", "IMAGE")
            thumbs = page.locator("#search-results img.thumb")
            expect(thumbs).to_have_count(3)
            page.wait_for_function(
                "() => [...document.querySelectorAll('#search-results img.thumb')]"
                ".every((i) => i.complete && i.naturalWidth > 0)"
            )
            sizes = thumbs.evaluate_all("imgs => imgs.map((i) => [i.naturalWidth, i.naturalHeight])")
            sources = thumbs.evaluate_all("imgs => imgs.map((i) => i.getAttribute('src'))")
            shot(page, "image-thumbnails")
            page.close()
    finally:
        emulator.stop()
    assert sizes == [[7, 4], [8, 4], [9, 4]]
    assert all(re.fullmatch(r"/v1/image\?url=[^&]+&sig=[0-9a-f]{32}", s) for s in sources), sources
    assert [len(emulator.requests(f"/img/aurora-{i}-thumb.jpg")) for i in (1, 2, 3)] == [1, 1, 1]
    assert [url for url in requested if not url.startswith(running.url + "/")] == []  # the proxy fetched them


def test_filters_reach_the_provider_and_more_results_appends_the_next_page(page, server, site):
    """Issue 47: the console's filters go to SearXNG's wire; "More results" asks the provider that
    served the page for its next one and appends its hits."""
    sign_in(page, server.token, project="filters")
    page.locator("#search-filters > summary").click()
    page.get_by_label("Not these domains").fill("pinterest.com, quora.com")
    page.get_by_label("Time range").select_option("week")
    before = len(site.emulator.requests("/sx/search"))
    search(page, "aurora filtered", "WEB")
    expect(page.locator("ol.hits > li h3")).to_have_text(["Aurora page 1", "Aurora page 2"])
    sent = site.emulator.requests("/sx/search")[before]
    assert sent.param("q") == "aurora filtered -site:pinterest.com -site:quora.com"
    assert (sent.param("time_range"), sent.param("pageno")) == ("week", "1")
    page.get_by_role("button", name="More results").click()
    expect(page.locator("ol.hits > li h3")).to_have_text(
        ["Aurora page 1", "Aurora page 2", "Aurora page 1 (p2)", "Aurora page 2 (p2)"]
    )
    following = site.emulator.requests("/sx/search")[before + 1]
    assert (following.param("pageno"), following.param("time_range")) == ("2", "week")
    assert following.param("q") == sent.param("q")

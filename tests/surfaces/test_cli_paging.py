"""`zarniwoop search … --next` (issue 47): three successive pages on the SearXNG, Brave, OpenAlex,
arXiv and Nominatim emulators are disjoint, and each upstream saw pages 1, 2, 3 the way its wire
counts them (Nominatim's by the places it is told to exclude).
The home keeps only the cursor, never the query; filters on the command line reach the wire."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..support.bodies import arxiv_page, brave_page, nominatim_places, openalex_page, searxng_page
from ..support.cli import run_cli
from ..support.emulator import Emulator
from ..support.providers_academic import add_arxiv, add_openalex
from ..support.providers_open import add_nominatim
from ..support.providers_web import KEYS, mount_brave, mount_searxng
from ..support.runtime import cascade, endpoint, write_config

PER_PAGE = 3


def _paged(emulator: Emulator, protocol: str) -> tuple[dict[str, Any], str, str, str]:
    """Settings, modality, the path the emulator answers on, and the wire's page parameter."""
    if protocol == "searxng":
        base = mount_searxng(emulator, {"general": lambda r: searxng_page(int(r.param("pageno") or 1))})
        return endpoint("searxng", "searxng", base), "web", "/searxng/search", "pageno"
    if protocol == "brave":
        path = "/res/v1/web/search"
        base = mount_brave(emulator, {path: lambda r: brave_page(int(r.param("offset") or 0))})
        return (
            endpoint("brave", "brave", base, apiKey=KEYS["brave"], enabled=True),
            "web",
            "/brave" + path,
            "offset",
        )
    if protocol == "openalex":
        base = add_openalex(emulator, body=lambda r: openalex_page(int(r.param("page") or 1), PER_PAGE))
        return endpoint("openalex", "openalex", base, enabled=True), "academic", "/openalex/works", "page"
    if protocol == "nominatim":
        base = add_nominatim(
            emulator, body=lambda r: nominatim_places(r.param("exclude_place_ids"), int(r.param("limit")), 10)
        )
        return (
            endpoint("nominatim", "nominatim", base, enabled=True),
            "map",
            "/nominatim/search",
            "exclude_place_ids",
        )
    base = add_arxiv(emulator, body=lambda r: arxiv_page(int(r.param("start") or 0), PER_PAGE))
    return endpoint("arxiv", "arxiv", base, enabled=True), "academic", "/arxiv/api/query", "start"


WIRE_PAGES = {
    "searxng": ["1", "2", "3"],  # pageno
    "brave": [None, "1", "2"],  # offset: a page index, the first page without one
    "openalex": [None, "2", "3"],  # page
    "arxiv": ["0", "3", "6"],  # start: results skipped
    "nominatim": [None, "101,102,103", "101,102,103,104,105,106"],  # exclude_place_ids: places shown
}


@pytest.mark.parametrize("protocol", sorted(WIRE_PAGES))
def test_three_next_pages_are_disjoint_and_upstream_saw_pages_1_2_3(tmp_path: Path, emulator, protocol):
    settings, modality, path, param = _paged(emulator, protocol)
    config = write_config(tmp_path, {"settings": cascade(modality, settings)})
    home = tmp_path / "home"
    common = (
        "--config",
        str(config),
        "search",
        "gene editing",
        "-m",
        modality,
        "-n",
        str(PER_PAGE),
        "--json",
    )
    pages = []
    for extra in ((), ("--next",), ("--next",)):
        ran = run_cli(*common, *extra, home=home)
        assert ran.code == 0, ran.stderr
        pages.append(json.loads(ran.stdout))
    urls = [[h["url"] for h in page["hits"]] for page in pages]
    assert all(len(u) == PER_PAGE for u in urls)
    assert len({u for page in urls for u in page}) == 3 * PER_PAGE  # disjoint
    assert all(page["providerInstanceId"] == protocol for page in pages)
    assert [r.param(param) for r in emulator.requests(path)] == WIRE_PAGES[protocol]
    kept = (home / "cli-next-page.json").read_text()
    assert "gene" not in kept and json.loads(kept)["default/default"] == pages[-1]["nextPage"]


def test_next_with_another_query_is_refused_naming_page(tmp_path: Path, emulator):
    settings, modality, _, _ = _paged(emulator, "searxng")
    config = write_config(tmp_path, {"settings": cascade(modality, settings)})
    home = tmp_path / "home"
    assert run_cli("--config", str(config), "search", "first", "--json", home=home).code == 0
    ran = run_cli("--config", str(config), "search", "second", "--next", "--json", home=home)
    assert ran.code == 2
    assert ran.stderr.startswith("error: page: this cursor belongs to another search")


def test_filters_on_the_command_line_reach_the_wire_and_bad_ones_name_the_option(tmp_path: Path, emulator):
    settings, modality, path, _ = _paged(emulator, "searxng")
    config = write_config(tmp_path, {"settings": cascade(modality, settings)})
    home = tmp_path / "home"
    ran = run_cli(
        "--config",
        str(config),
        "search",
        "q",
        "--exclude-domain",
        "wikipedia.org",
        "--include-domain",
        "example.org",
        "--time-range",
        "month",
        "--safe-search",
        "off",
        "--json",
        home=home,
    )
    assert ran.code == 0, ran.stderr
    [received] = emulator.requests(path)
    assert received.param("q") == "q site:example.org -site:wikipedia.org"
    assert (received.param("time_range"), received.param("safesearch")) == ("month", "0")
    bad = run_cli("--config", str(config), "search", "q", "--time-range", "fortnight", home=home)
    assert bad.code == 2
    assert bad.stderr.strip() == "error: timeRange: expected one of day, week, month, year, got 'fortnight'"

"""Wikipedia: the recorded REST search, Action API, summary and error bodies; instance languages."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import ContentInline, InstanceConfig, Modality, ParseError, RawResponse, SearchRequest
from zarniwoop.contract.filters import PageResume
from zarniwoop.protocols.wikipedia import PROTOCOL

from ..support.fuzz_academic import any_body, json_bodies, parses_or_refuses
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

CONFIG = InstanceConfig("wikipedia", "wikipedia")


def parse(body: bytes, modality: str = "encyclopedia", config: InstanceConfig = CONFIG, **kw):
    return parse_body(PROTOCOL, config, "shell", modality, body, **kw)


def test_build_request_rest_search():
    spec = PROTOCOL.build_request(
        SearchRequest.create("linksto:Shell", "encyclopedia", max_results=5), CONFIG
    )
    assert spec.url == "https://en.wikipedia.org/w/rest.php/v1/search/page"
    assert dict(spec.params) == {"q": "linksto:Shell", "limit": "5"}
    assert spec.state["language"] == "en"


def test_a_full_rest_page_offers_the_next_offset_and_a_short_one_none():
    body = fixture_bytes("wikipedia", "core-rest-search-page-linksto-shell.json")  # five pages
    assert parse(body, max_results=5).next_page == {"offset": "5"}
    assert parse(body, max_results=10).next_page is None


def test_page_two_asks_the_action_api_at_the_offset_and_continues_where_it_says():
    asked = SearchRequest.create("linksto:Shell", "encyclopedia", max_results=5)
    resumed = replace(asked, resume=PageResume("wikipedia", (("offset", "5"),)))
    spec = PROTOCOL.build_request(resumed, CONFIG)
    assert spec.url == "https://en.wikipedia.org/w/api.php"
    assert dict(spec.params) == {
        "action": "query",
        "list": "search",
        "srsearch": "linksto:Shell",
        "srlimit": "5",
        "sroffset": "5",
        "srprop": "snippet",
        "format": "json",
        "formatversion": "2",
    }
    assert spec.state["honoured"] == ["page"]
    recorded = fixture_bytes("wikipedia", "action-query-list-search-suggestion-formatversion2.json")
    page = PROTOCOL.parse_response(RawResponse(200, {}, recorded), spec, resumed)
    assert ([h.title for h in page.hits], page.next_page) == (
        ["Asad"],
        {"offset": "1"},
    )  # `continue.sroffset`
    last = json.loads(recorded)
    del last["continue"]  # past the last result the Action API sends no continuation
    assert (
        PROTOCOL.parse_response(RawResponse(200, {}, json.dumps(last).encode()), spec, resumed).next_page
        is None
    )


@pytest.mark.parametrize(
    ("base_url", "extras", "language"),
    [
        ("https://de.wikipedia.org", {}, "de"),
        ("https://de.m.wikipedia.org/", {}, "de"),
        ("https://zh-yue.wikipedia.org", {}, "zh-yue"),
        ("http://127.0.0.1:9/mirror", {}, None),
        ("http://127.0.0.1:9/mirror", {"language": "FR"}, "fr"),
        (None, {}, "en"),
    ],
)
def test_instance_language_from_extra_or_host(base_url, extras, language):
    config = InstanceConfig("w", "wikipedia", base_url=base_url, extras=extras)
    assert PROTOCOL.instance_language(config) == language


def test_core_rest_search_five_pages_with_urls_descriptions_and_thumbnails():
    page = parse(fixture_bytes("wikipedia", "core-rest-search-page-linksto-shell.json"))
    assert [h.title for h in page.hits] == [
        "North Korea",
        "Microsoft Windows",
        "MacOS",
        "Linux",
        "Operating system",
    ]
    first = page.hits[0]
    assert first.url == "https://en.wikipedia.org/wiki/North_Korea"
    assert first.modality is Modality.ENCYCLOPEDIA
    assert first.snippet.startswith(
        "North Korea, officially the Democratic People's Republic of Korea (DPRK)"
    )
    assert first.content.inline is ContentInline.EMBED_TEXT
    assert first.extras["pageId"] == 21255
    assert first.extras["description"] == "Country in East Asia"
    assert first.extras["thumbnailUrl"] == (
        "https://upload.wikimedia.org/wikipedia/commons/thumb/5/51/Flag_of_North_Korea.svg/60px-Flag_of_North_Korea.svg.png"
    )
    assert "thumbnailUrl" not in page.hits[1].extras  # `thumbnail: null`
    assert page.hits[3].snippet.startswith("Linux (/ˈlɪnʊks/ LIN-uuks) is a family")  # IPA kept


def test_rest_search_as_web_fallback_and_mirror_base():
    config = InstanceConfig("wiki-de", "wikipedia", base_url="http://127.0.0.1:9/de")
    page = parse(fixture_bytes("wikipedia", "core-rest-search-page-linksto-shell.json"), "web", config)
    assert page.hits[2].url == "http://127.0.0.1:9/de/wiki/MacOS"
    assert all(h.modality is Modality.WEB for h in page.hits)


def test_action_api_search_with_suggestion_but_no_totalhits():
    page = parse(fixture_bytes("wikipedia", "action-query-list-search-suggestion-formatversion2.json"))
    [hit] = page.hits
    assert hit.title == "Asad"
    assert hit.url == "https://en.wikipedia.org/wiki/Asad"
    assert hit.extras == {"pageId": 3352873}
    assert hit.snippet is None


def test_rest_summary_fermat():
    page = parse(fixture_bytes("wikipedia", "rest-summary-fermats-last-theorem.json"))
    [hit] = page.hits
    assert hit.title == "Fermat's Last Theorem"
    assert hit.url == "https://en.wikipedia.org/wiki/Fermat's_Last_Theorem"
    assert hit.snippet == "theorem in number theory"
    assert hit.content.text.startswith(
        "In number theory, Fermat's Last Theorem states that no three positive"
    )
    assert hit.extras["pageId"] == 19021953


def test_action_api_error_is_a_soft_error():
    page = parse(fixture_bytes("wikipedia", "action-api-error-unknown-action.json"))
    assert page.hits == ()
    assert (
        page.error_message
        == 'wikipedia error unknown_action: Unrecognized value for parameter "action": oscillate.'
    )


def test_language_param_honoured_only_by_a_wiki_in_that_language():
    body = fixture_bytes("wikipedia", "core-rest-search-page-linksto-shell.json")
    german = InstanceConfig("wiki-de", "wikipedia", base_url="https://de.wikipedia.org")
    assert parse(body, config=german, expert_params={"language": "de-CH"}).note is None
    assert parse(body, expert_params={"language": "de"}).note == "ignored by this provider: language"


def test_junk_is_a_parse_error():
    with pytest.raises(ParseError):
        parse(b'{"unexpected": true}')
    with pytest.raises(ParseError):
        parse(b"<!doctype html>")


@settings(deadline=None)
@given(data=st.data())
def test_broken_bodies_raise_only_parse_error(data):
    for name in ("core-rest-search-page-linksto-shell.json", "rest-summary-fermats-last-theorem.json"):
        real = fixture_bytes("wikipedia", name)
        parses_or_refuses(parse, data.draw(any_body(real)))
        parses_or_refuses(parse, data.draw(json_bodies(json.loads(real))))
    action = fixture_bytes("wikipedia", "action-query-list-search-suggestion-formatversion2.json")
    parses_or_refuses(parse, data.draw(json_bodies(json.loads(action))))

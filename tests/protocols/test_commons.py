"""Wikimedia Commons: file-namespace search with imageinfo, the zero-hit suggestion, error bodies."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import InstanceConfig, RawResponse, SearchRequest
from zarniwoop.protocols.commons import PROTOCOL

from ..support.fuzz_academic import survives_broken_json
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

CONFIG = InstanceConfig("commons", "commons", extras={"contactEmail": "images@example.org"})
VIDEO_SEARCH = ("wikimedia-commons", "generator-search-ns6-filetype-video-cat-offset-40-imageinfo.json")
DETAILS = ("wikimedia-commons", "titles-file-imageinfo-extmetadata-tired-cat-details.json")
NO_PAGES = ("wikimedia-commons", "generator-search-ns6-zero-results-with-suggestion-no-pages.json")


def parse(body: bytes, **kw):
    return parse_body(PROTOCOL, CONFIG, "cat", "image", body, **kw)


def test_build_request_searches_files_for_pictures_with_imageinfo_and_a_contact():
    request = SearchRequest.create("aurora borealis", "image", max_results=80, locale="de-CH")
    spec = PROTOCOL.build_request(request, CONFIG)
    assert spec.url == "https://commons.wikimedia.org/w/api.php"
    params = dict(spec.params)
    assert params["generator"] == "search" and params["gsrnamespace"] == "6"
    assert params["gsrsearch"] == "aurora borealis filetype:bitmap|drawing"
    assert params["gsrlimit"] == "50"
    assert params["iiprop"] == "url|size|mime|extmetadata"
    assert params["iiextmetadatalanguage"] == "de"
    assert spec.headers["User-Agent"] == (
        "zarniwoop/0.1 (+https://pypi.org/project/zarniwoop/; mailto:images@example.org)"
    )


def test_a_file_with_extmetadata_carries_licence_author_and_sizes():
    [hit] = parse(fixture_bytes(*DETAILS)).hits
    assert hit.title == "Tired 20-year-old cat.jpg"
    assert hit.url == "https://commons.wikimedia.org/wiki/File:Tired_20-year-old_cat.jpg"
    assert hit.snippet == "A 20-year-old cat that looks tired because of its advanced age."
    assert hit.extras == {
        "imageUrl": "https://upload.wikimedia.org/wikipedia/commons/3/32/Tired_20-year-old_cat.jpg",
        "thumbnailUrl": "https://upload.wikimedia.org/wikipedia/commons/thumb/3/32/"
        "Tired_20-year-old_cat.jpg/239px-Tired_20-year-old_cat.jpg",
        "width": 2484,
        "height": 1870,
        "mimeType": "image/jpeg",
        "fileSize": 3017217,
        "license": "CC BY 2.0 fr",
        "licenseUrl": "https://creativecommons.org/licenses/by/2.0/fr/deed.en",
        "artist": "Dimitri “Diti” Torterat",
        "attributionRequired": True,
        "createdAt": "18 January 2009",
        "pageId": 9809267,
    }


def test_search_pages_come_in_rank_order_with_the_total():
    page = parse(fixture_bytes(*VIDEO_SEARCH), max_results=40)
    assert page.total == 9104
    assert len(page.hits) == 40
    first, second = page.hits[:2]
    assert first.title == "Private Life of a Cat.ogv"  # `index` 41: the first of this second page
    assert first.url == "https://commons.wikimedia.org/wiki/File:Private_Life_of_a_Cat.ogv"
    assert first.extras["mimeType"] == "application/ogg"
    assert first.extras["duration"] == 1321.42
    assert (first.extras["width"], first.extras["height"]) == (400, 300)
    assert second.title == "Cat play 02.webm"
    assert "<span" not in (first.snippet or "")


def test_no_pages_is_empty_with_the_suggestion_minus_our_filter():
    page = parse(fixture_bytes(*NO_PAGES))
    assert page.hits == () and page.total == 0
    assert page.note.startswith("did you mean: filemime:jpeg haswbstatement:")


def test_error_bodies_are_soft_errors_and_describe_non_2xx():
    body = b'{"error": {"code": "badvalue", "info": "Unrecognized value for parameter \\"prop\\"."}}'
    assert parse(body).error_message == 'commons: badvalue: Unrecognized value for parameter "prop".'
    assert PROTOCOL.describe_error(RawResponse(403, {}, body)) == 'Unrecognized value for parameter "prop".'
    assert parse(b'{"batchcomplete": ""}').hits == ()


@settings(deadline=None)
@given(data=st.data())
def test_broken_bodies_raise_only_parse_error(data):
    survives_broken_json(parse, data, fixture_bytes(*DETAILS))

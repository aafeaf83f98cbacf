"""Nominatim: jsonv2 places with coordinates and OSM objects, a postcode without one, errors."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import InstanceConfig, RawResponse, SearchRequest
from zarniwoop.contract.filters import PageResume
from zarniwoop.protocols.nominatim import PROTOCOL

from ..support.fuzz_academic import survives_broken_json
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

PALAIS = ("nominatim", "search-jsonv2-1-place-des-palais-bruxelles-5-results.json")
POSTCODE = ("nominatim", "search-jsonv2-90210-united-states-postcode-no-osm-id.json")
NOTHING = ("nominatim", "search-jsonv2-gibberish-zero-results.json")
CONFIG = InstanceConfig(
    "nominatim", "nominatim", extras={"contactEmail": "maps@example.org", "countryCodes": "BE, nl"}
)


def parse(body: bytes, **kw):
    return parse_body(PROTOCOL, CONFIG, "1 Place des Palais", "map", body, **kw)


def test_build_request_identifies_the_operator_and_honours_the_policy_pace():
    request = SearchRequest.create("Bruxelles", "map", max_results=99, locale="fr-BE")
    spec = PROTOCOL.build_request(request, CONFIG)
    assert spec.url == "https://nominatim.openstreetmap.org/search"
    assert dict(spec.params) == {
        "q": "Bruxelles",
        "format": "jsonv2",
        "limit": "40",
        "addressdetails": "1",
        "extratags": "1",
        "accept-language": "fr",
        "countrycodes": "be,nl",
        "email": "maps@example.org",
    }
    assert "mailto:maps@example.org" in spec.headers["User-Agent"]
    assert PROTOCOL.default_rate_per_second == 1.0


PALAIS_IDS = "257906993,47175961,24442199,24692458,322634700"


def test_a_full_page_offers_its_place_ids_for_exclusion_and_a_short_one_none():
    assert parse(fixture_bytes(*PALAIS), max_results=5).next_page == {"shown": PALAIS_IDS}
    assert parse(fixture_bytes(*PALAIS), max_results=6).next_page is None
    assert parse(fixture_bytes(*NOTHING), max_results=5).next_page is None


def test_page_two_excludes_the_places_shown_and_page_three_excludes_both_pages():
    asked = SearchRequest.create("Bruxelles", "map", max_results=5)
    resumed = replace(asked, resume=PageResume("nominatim", (("shown", "1,2,3,4,5"),)))
    spec = PROTOCOL.build_request(resumed, InstanceConfig("nominatim", "nominatim"))
    assert dict(spec.params) == {
        "q": "Bruxelles",
        "format": "jsonv2",
        "limit": "5",
        "addressdetails": "1",
        "extratags": "1",
        "exclude_place_ids": "1,2,3,4,5",
    }
    assert spec.state["honoured"] == ["page"]
    page = PROTOCOL.parse_response(RawResponse(200, {}, fixture_bytes(*PALAIS)), spec, resumed)
    assert page.next_page == {"shown": "1,2,3,4,5," + PALAIS_IDS}


def test_paging_stops_once_200_places_were_shown():
    asked = SearchRequest.create("Bruxelles", "map", max_results=5)
    for earlier, more in ((194, True), (195, False)):  # 194 + the page's 5 = 199 ids; 195 + 5 = 200
        shown = ",".join(str(i) for i in range(1, earlier + 1))
        resumed = replace(asked, resume=PageResume("nominatim", (("shown", shown),)))
        spec = PROTOCOL.build_request(resumed, InstanceConfig("nominatim", "nominatim"))
        page = PROTOCOL.parse_response(RawResponse(200, {}, fixture_bytes(*PALAIS)), spec, resumed)
        assert (page.next_page is not None) is more


def test_places_have_coordinates_bounding_box_osm_object_and_category():
    page = parse(fixture_bytes(*PALAIS))
    assert [h.title for h in page.hits] == [
        "Palais Royal - Koninklijk Paleis",
        "Coudenberg",
        "Musée BELvue - BELvue Museum",
        "1 Place des Palais - Paleizenplein",
        "Les Filles",
    ]
    palace = page.hits[0]
    assert palace.url == "https://www.openstreetmap.org/relation/3299902"
    assert palace.snippet.startswith("Palais Royal - Koninklijk Paleis, 1, Place des Palais - Paleizenplein")
    assert palace.extras["lat"] == 50.8419916 and palace.extras["lon"] == 4.3619888303182375
    assert palace.extras["boundingBox"] == [50.8411653, 50.8428129, 4.3601343, 4.3646336]
    assert (palace.extras["osmType"], palace.extras["osmId"]) == ("relation", 3299902)
    assert (palace.extras["category"], palace.extras["type"]) == ("tourism", "attraction")
    assert palace.extras["countryCode"] == "be"
    assert palace.extras["wikidata"] == "Q635307"
    assert palace.extras["licence"].startswith("Data © OpenStreetMap contributors, ODbL 1.0")
    assert page.hits[1].url == "https://www.openstreetmap.org/node/3860604720"


def test_a_place_without_osm_object_links_to_the_map_at_its_coordinates():
    [hit] = parse(fixture_bytes(*POSTCODE)).hits
    assert hit.title == "Beverly Hills"
    assert (
        hit.url
        == "https://www.openstreetmap.org/?mlat=34.095083&mlon=-118.399322#map=17/34.095083/-118.399322"
    )
    assert "osmId" not in hit.extras
    assert (hit.extras["category"], hit.extras["type"]) == ("place", "postcode")


def test_no_match_and_errors():
    assert parse(fixture_bytes(*NOTHING)).hits == ()
    assert parse(b'{"error": "Unable to geocode"}').error_message == "nominatim: Unable to geocode"
    body = b'{"error": {"code": 400, "message": "Parameter \'format\' must be one of: xml, json, jsonv2"}}'
    assert parse(body).error_message.startswith("nominatim: Parameter 'format' must be one of")
    assert PROTOCOL.describe_error(RawResponse(400, {}, body)).startswith("Parameter 'format'")


@settings(deadline=None)
@given(data=st.data())
def test_broken_bodies_raise_only_parse_error(data):
    survives_broken_json(parse, data, fixture_bytes(*PALAIS))

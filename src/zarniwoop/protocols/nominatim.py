"""Nominatim — OpenStreetMap's geocoder: places, addresses and points of interest by name.

`GET https://nominatim.openstreetmap.org/search?q=…&format=jsonv2&limit=N&addressdetails=1`.
Each result is a place with coordinates, a bounding box, its OSM object (node/way/relation and id),
a display name and a category/type (`tourism`/`museum`). No key.

Docs: https://nominatim.org/release-docs/latest/api/Search/
Usage policy: https://operations.osmfoundation.org/policies/nominatim/

    research.endpoint.nominatim.protocol: nominatim
    research.endpoint.nominatim.baseUrl: https://nominatim.openstreetmap.org   # `/search` is appended
    research.endpoint.nominatim.contactEmail: maps@example.org                 # sent as `email`, as asked
    research.endpoint.nominatim.countryCodes: ch,de                            # optional: restrict countries

Pages: Nominatim has no offset. Its documented way to "more results" is `exclude_place_ids`, the
comma-separated `place_id`s not to return again (its own UI's "more results" link is that): a page's
`next_page` carries every `place_id` shown so far, and the next request excludes them all (up to
`MAX_SHOWN` places: the list rides in the URL). A page shorter than `limit` is the last (Nominatim answers fewer only when nothing else matches well
enough). `place_id`s belong to one installation: the cursor resumes on the instance that made it.

Quirks:
- The public server's policy: an absolute maximum of 1 request per second (enforced per IP), an
  identifying User-Agent (stock library agents are refused), results cached, no bulk geocoding.
  The default pace is 1/s and MAP answers are cached for a day (`research.cache.ttlSeconds.map`).
- `lat`, `lon`, `importance` and the `boundingbox` entries are strings (`boundingbox` is
  `[south, north, west, east]`); they are read into numbers.
- A result may lack `osm_type`/`osm_id` (postcode areas are computed, not OSM objects): its URL is
  then the map at its coordinates.
- No match is `[]`; an error is HTTP 200 or 400 with `{"error": "…"}` or `{"error": {"code", "message"}}`.
- The data is © OpenStreetMap contributors, ODbL: every hit carries the `licence` line to display.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..contract.enums import Modality
from ..contract.errors import ParseError
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import SearchHit
from ._filters import paging_honoured, resumed_text
from ._polite import polite_get
from ._text import as_int, expect, load_json, obj
from ._web import compact, error_text, language, listed_page, text_for

DEFAULT_BASE_URL = "https://nominatim.openstreetmap.org"
OSM_OBJECT_URL = "https://www.openstreetmap.org/{type}/{id}"
OSM_MAP_URL = "https://www.openstreetmap.org/?mlat={lat}&mlon={lon}#map=17/{lat}/{lon}"
MAX_LIMIT = 40
MAX_SHOWN = 200
"""Places one search pages through at most: `exclude_place_ids` names every place shown so far, and a
request line of a couple of KB is what every server and proxy takes (200 ids ≈ 2 KB)."""
"""Nominatim caps `limit` at 40."""
_HOUSE_NUMBER = re.compile(r"^\d+\s?[a-zA-Z]?$")
_OSM_TYPES = {"node": "node", "way": "way", "relation": "relation", "n": "node", "w": "way", "r": "relation"}
"""jsonv2 spells the OSM type out; other formats abbreviate it (`N`, `W`, `R`)."""


class NominatimProtocol:
    id = "nominatim"
    display_name = "OpenStreetMap Nominatim"
    modalities = frozenset({Modality.MAP})
    key_required = False
    html_in_text = False
    filters = frozenset({"language", "region", "page"})
    """`accept-language`, `countrycodes`; pages by `exclude_place_ids` (the places shown so far)."""
    default_rate_per_second = 1.0
    """The usage policy's absolute maximum: one request per second."""
    prompt_hint = (
        "**OpenStreetMap Nominatim** — finds places, addresses and points of interest by name, with "
        "coordinates, bounding box, category and the full address. Best for 'where is …' and locating "
        "a named place; not for routing, opening hours or reviews."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        limit = min(request.max_results, MAX_LIMIT)
        params: list[tuple[str, str]] = [
            ("q", request.query),
            ("format", "jsonv2"),
            ("limit", str(limit)),
            ("addressdetails", "1"),
            ("extratags", "1"),
        ]
        honoured = paging_honoured(request)
        shown = resumed_text(request, "shown")
        if shown:
            params.append(("exclude_place_ids", shown))
        lang = language(request)
        if lang:
            params.append(("accept-language", lang))
            honoured.append("language")
        countries = (config.extra("countryCodes") or "").replace(" ", "").lower()
        if request.filters.region:  # the caller's country narrows the endpoint's list, never widens it
            wanted = request.filters.region.lower()
            if not countries or wanted in countries.split(","):
                countries = wanted
                honoured.append("region")
        if countries:
            params.append(("countrycodes", countries))
        return polite_get(
            config, DEFAULT_BASE_URL, "/search", params, "email", honoured=honoured, limit=limit, shown=shown
        )

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_json(raw.body, "nominatim")
        if isinstance(data, dict):
            error = data.get("error")
            message = text(obj(error).get("message")) or text(error)
            if message:
                return SearchPage(error_message=f"nominatim: {message}")
            raise ParseError("nominatim: expected a JSON list of places")
        places = expect(data, list, "nominatim")
        return listed_page(places, _hit, request, {"language"}, next_page=_next_page(places, spec))

    def describe_error(self, raw: RawResponse) -> str | None:
        return error_text(raw, "error.message", "error")


def _next_page(places: list[Any], spec: RequestSpec) -> dict[str, str] | None:
    """Every `place_id` shown so far, this page's after the earlier ones', for the next request to
    exclude; none after a short page, or once `MAX_SHOWN` places were shown."""
    if not places or len(places) < spec.state.get("limit", 0):
        return None
    ids = [str(i) for i in (as_int(obj(place).get("place_id")) for place in places) if i is not None]
    earlier = spec.state.get("shown")
    count = (earlier.count(",") + 1 if earlier else 0) + len(ids)
    if not ids or count >= MAX_SHOWN:
        return None
    return {"shown": ",".join([earlier, *ids] if earlier else ids)}


def _number(value: Any) -> float | None:
    """A finite number from Nominatim's string-typed coordinates (`"50.8419916"`)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _bounding_box(value: Any) -> list[float] | None:
    if not isinstance(value, list) or len(value) != 4:
        return None
    numbers = [_number(v) for v in value]
    return [n for n in numbers if n is not None] if None not in numbers else None


def _url(place: dict[str, Any], lat: float | None, lon: float | None) -> str | None:
    osm_type = _OSM_TYPES.get(str(place.get("osm_type") or "").lower())
    osm_id = as_int(place.get("osm_id"))
    if osm_type and osm_id is not None and osm_id > 0:
        return OSM_OBJECT_URL.format(type=osm_type, id=osm_id)
    if lat is not None and lon is not None and -90 <= lat <= 90 and -180 <= lon <= 180:
        return OSM_MAP_URL.format(lat=f"{lat:.6f}", lon=f"{lon:.6f}")
    return None


def _name(display: str | None) -> str | None:
    """The place's name from its display name: the first part, with the street when it is a number."""
    parts = [p.strip() for p in (display or "").split(",") if p.strip()]
    if not parts:
        return None
    if _HOUSE_NUMBER.match(parts[0]) and len(parts) > 1:  # "1, Place des Palais, …" → "1 Place des Palais"
        return f"{parts[0]} {parts[1]}"
    return parts[0]


def _hit(place: dict[str, Any], modality: Modality) -> SearchHit | None:
    display = text(place.get("display_name"))
    lat, lon = _number(place.get("lat")), _number(place.get("lon"))
    url = _url(place, lat, lon)
    name = text(place.get("name")) or _name(display)
    if not name or not url:
        return None
    address = {str(k): v for k, v in obj(place.get("address")).items() if isinstance(v, str) and v}
    extras = {
        "lat": lat,
        "lon": lon,
        "boundingBox": _bounding_box(place.get("boundingbox")),
        "osmType": _OSM_TYPES.get(str(place.get("osm_type") or "").lower()),
        "osmId": as_int(place.get("osm_id")),
        "displayName": display,
        "category": text(place.get("category")) or text(place.get("class")),
        "type": text(place.get("type")),
        "placeRank": as_int(place.get("place_rank")),
        "importance": _number(place.get("importance")),
        "address": address,
        "countryCode": address.get("country_code"),
        "wikidata": text(obj(place.get("extratags")).get("wikidata")),
        "licence": text(place.get("licence")),
    }
    return SearchHit(
        title=name,
        url=url,
        modality=modality,
        snippet=display,
        source="nominatim",
        extras=compact(extras),
    )


PROTOCOL = NominatimProtocol()
text = text_for(PROTOCOL)

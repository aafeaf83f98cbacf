"""Wikimedia Commons — 100M+ freely licensed images, through the MediaWiki action API.

`GET https://commons.wikimedia.org/w/api.php?action=query&generator=search&gsrnamespace=6&…&prop=
imageinfo|info` searches the File: namespace and returns, per file, its `imageinfo`: the file URL,
a thumbnail scaled to `iiurlwidth`, width, height, MIME type and — with `iiprop=extmetadata` — the
licence, the author and the description. No key.

Docs: https://www.mediawiki.org/wiki/API:Search and https://www.mediawiki.org/wiki/API:Imageinfo
(policy: https://foundation.wikimedia.org/wiki/Policy:Wikimedia_Foundation_User-Agent_Policy)

    research.endpoint.commons.protocol: commons
    research.endpoint.commons.baseUrl: https://commons.wikimedia.org     # `/w/api.php` is appended
    research.endpoint.commons.contactEmail: images@example.org           # in the User-Agent, as asked

Quirks:
- Every request must carry a descriptive User-Agent with contact information; generic agents may be
  blocked and an empty one gets HTTP 403. The transport's agent names the project; `contactEmail`
  adds the operator's address.
- `gsrsearch` takes CirrusSearch syntax: `filetype:bitmap|drawing` keeps IMAGE to pictures (the
  same search without it returns videos and PDFs too).
- `query.pages` is an object keyed by page id (format version 1) in no useful order; each page's
  `index` is its search rank. A list (format version 2) is read as well.
- No match: no `query.pages` key at all, only `query.searchinfo` with `totalhits` 0 and maybe a
  `suggestion`.
- `extmetadata` values are `{value, source}` objects; `Artist`, `ImageDescription` and `Credit` hold
  HTML. A licence is `LicenseShortName` ("CC BY-SA 4.0"), its link `LicenseUrl`.
- Errors are HTTP 200 with `{"error": {"code", "info"}}`.
"""

from __future__ import annotations

from typing import Any

from ..contract.enums import Modality
from ..contract.errors import ParseError
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import SearchHit
from ._polite import identifying_headers
from ._text import as_int, embedded, expect, load_object, obj, shorten, strip_html, unsupported_note
from ._web import compact, endpoint, error_text, http_url, json_get, text

DEFAULT_BASE_URL = "https://commons.wikimedia.org"
MAX_LIMIT = 50
"""`gsrlimit` allows 50 for anonymous clients (500 for bots); a search page never needs more."""
THUMB_WIDTH = 320
IMAGE_FILTER = "filetype:bitmap|drawing"
METADATA = "LicenseShortName|LicenseUrl|Artist|ImageDescription|DateTimeOriginal|AttributionRequired"
"""The `extmetadata` fields read into extras (`iiextmetadatafilter` keeps the answer small)."""


class CommonsProtocol:
    id = "commons"
    display_name = "Wikimedia Commons"
    modalities = frozenset({Modality.IMAGE})
    key_required = False
    html_in_text = True
    default_rate_per_second = 5.0
    """Wikimedia sets no hard read limit but asks for serial requests; 5/s stays well inside that."""
    prompt_hint = (
        "**Wikimedia Commons** — 100M+ freely licensed photos, drawings, maps and diagrams, each with "
        "its licence, author and description. Best for reusable images of places, species, objects, "
        "people and history; not for stock or commercial imagery."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        params = (
            ("action", "query"),
            ("format", "json"),
            ("generator", "search"),
            ("gsrnamespace", "6"),
            ("gsrsearch", f"{request.query} {IMAGE_FILTER}"),
            ("gsrlimit", str(min(request.max_results, MAX_LIMIT))),
            ("gsrinfo", "totalhits|suggestion"),
            ("gsrprop", "snippet|timestamp"),
            ("prop", "imageinfo|info"),
            ("inprop", "url"),
            ("iiprop", "url|size|mime|extmetadata"),
            ("iiurlwidth", str(THUMB_WIDTH)),
            ("iiextmetadatafilter", METADATA),
            ("iiextmetadatalanguage", _language(request)),
        )
        return json_get(endpoint(config, DEFAULT_BASE_URL, "/w/api.php"), params, identifying_headers(config))

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "commons")
        error = data.get("error")
        if isinstance(error, dict):
            return SearchPage(error_message=f"commons: {error.get('code')}: {text(error.get('info')) or ''}")
        if "query" not in data:
            if "batchcomplete" in data:  # nothing matched and nothing to say
                return SearchPage(total=0)
            raise ParseError("commons: body has no query")
        query = expect(data["query"], dict, "commons query")
        info = obj(query.get("searchinfo"))
        pages = _ranked_pages(query.get("pages"))
        hits = tuple(h for h in (_hit(p, request.modality) for p in pages) if h)
        note = unsupported_note(request, {"language"})
        # The suggestion echoes the whole search, our file-type filter included.
        suggestion = text((text(info.get("suggestion")) or "").replace(IMAGE_FILTER, ""))
        if not hits and suggestion:
            note = "; ".join(filter(None, [note, f"did you mean: {suggestion}"]))
        return SearchPage(hits=hits[: request.max_results], total=as_int(info.get("totalhits")), note=note)

    def describe_error(self, raw: RawResponse) -> str | None:
        return error_text(raw, "error.info", "error.code")


def _language(request: SearchRequest) -> str:
    value = request.expert_params.get("language") or request.locale or "en"
    return value.replace("_", "-").split("-")[0].lower() or "en"


def _ranked_pages(pages: Any) -> list[dict[str, Any]]:
    """Pages in search rank (`index`), from the object (format 1) or list (format 2) form."""
    found = pages.values() if isinstance(pages, dict) else pages if isinstance(pages, list) else []
    rows = [p for p in found if isinstance(p, dict)]
    return sorted(rows, key=lambda p: as_int(p.get("index")) or 0)


def _hit(page: dict[str, Any], modality: Modality) -> SearchHit | None:
    title = text(page.get("title"))
    infos = page.get("imageinfo")
    info = obj(infos[0]) if isinstance(infos, list) and infos else {}
    url = (
        http_url(page.get("canonicalurl"))
        or http_url(page.get("fullurl"))
        or http_url(info.get("descriptionurl"))
    )
    if not title or not url:
        return None
    meta = _metadata(info.get("extmetadata"))
    description = meta.get("ImageDescription")
    terms = obj(page.get("entityterms")).get("label")
    label = text(terms[0]) if isinstance(terms, list) and terms else None
    snippet = strip_html(text(page.get("snippet"))) or description or label
    extras = {
        "imageUrl": http_url(info.get("url")),
        "thumbnailUrl": http_url(info.get("thumburl")),
        "width": as_int(info.get("width")),
        "height": as_int(info.get("height")),
        "mimeType": text(info.get("mime")),
        "fileSize": as_int(info.get("size")),
        "duration": _seconds(info.get("duration")),
        "license": meta.get("LicenseShortName"),
        "licenseUrl": http_url(meta.get("LicenseUrl")),
        "artist": meta.get("Artist"),
        "attributionRequired": {"true": True, "false": False}.get(
            (meta.get("AttributionRequired") or "").lower()
        ),
        "createdAt": meta.get("DateTimeOriginal"),
        "pageId": as_int(page.get("pageid")),
    }
    return SearchHit(
        title=title.removeprefix("File:"),
        url=url,
        modality=modality,
        snippet=shorten(snippet),
        source="commons",
        content=embedded(description),
        extras=compact(extras),
    )


def _metadata(value: Any) -> dict[str, str]:
    """`extmetadata` as plain strings (HTML stripped): `{"Artist": "Dimitri Torterat", …}`."""
    out: dict[str, str] = {}
    for name, entry in obj(value).items():
        raw = obj(entry).get("value")
        cleaned = strip_html(raw) if isinstance(raw, str) else None
        if cleaned:
            out[str(name)] = cleaned
    return out


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e9:
        return None
    return round(float(value), 2)


PROTOCOL = CommonsProtocol()

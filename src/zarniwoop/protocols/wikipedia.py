"""Wikipedia — the free encyclopedia, one language per instance.

Searches the MediaWiki core REST API (`/w/rest.php/v1/search/page`), which returns the page key,
title, description and a plain excerpt for each match in one call. The parser also reads the
Action API (`/w/api.php?action=query&list=search`) and the REST summary endpoint, since
operators point `baseUrl` at mirrors that speak either.

Docs: https://www.mediawiki.org/wiki/API:REST_API/Reference#Search_pages

    research.endpoint.wiki-de.protocol: wikipedia
    research.endpoint.wiki-de.baseUrl: https://de.wikipedia.org
    research.endpoint.wiki-de.language: de        # routed by the request's locale

Pages: the REST search takes `q` and `limit` only and always starts at the first result (its
handler fixes the offset at 0; there is no continuation in its answer). A resumed request therefore
asks the Action API, `/w/api.php?action=query&list=search&sroffset=N`, which runs the same search
engine (on Wikipedia over the same main namespace), so its offsets continue the REST page: page
one from REST (with descriptions and thumbnails), later pages from `list=search` (title and
snippet), each next offset the one the Action API answers in `continue.sroffset` (none past its
last result).

Quirks:
- REST search hits have no URL: build `{baseUrl}/wiki/{key}`.
- Thumbnails are protocol-relative (`//upload.wikimedia.org/...`).
- Action API errors come back with HTTP 200 and an `errors[]` (or old-style `error{}`) body.
"""

from __future__ import annotations

import re
import string
from typing import Any
from urllib.parse import quote, urlsplit

from ..contract.enums import Modality
from ..contract.errors import ParseError
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import SearchHit
from ._filters import next_offset, paging_honoured, resumed_int
from ._text import as_int, embedded, expect, load_object, obj, strip_html, text, unsupported_note
from ._web import json_get

DEFAULT_BASE_URL = "https://en.wikipedia.org"
MAX_LIMIT = 100
"""The REST search endpoint accepts `limit` from 1 to 100."""
_WIKI_HOST = re.compile(r"^([a-z]{2,3}(?:-[a-z]+)*)\.(?:m\.)?wikipedia\.org$")


class WikipediaProtocol:
    id = "wikipedia"
    display_name = "Wikipedia"
    modalities = frozenset({Modality.ENCYCLOPEDIA, Modality.WEB})
    key_required = False
    html_in_text = True
    filters = frozenset({"page"})
    """Pages by offset: the first from the REST search, the next ones from the Action API (`sroffset`)."""
    default_rate_per_second = 10.0
    prompt_hint = (
        "**Wikipedia** — encyclopedia articles with a lead excerpt. Best for definitions, background, "
        "people, places and events; weak for recent news and primary research."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        base = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
        limit = str(min(request.max_results, MAX_LIMIT))
        path, params = "/w/rest.php/v1/search/page", [("q", request.query), ("limit", limit)]
        offset = resumed_int(request, "offset", 0)
        if offset:  # the REST search has no offset: a later page is the Action API's list=search
            path, params = (
                "/w/api.php",
                [
                    ("action", "query"),
                    ("list", "search"),
                    ("srsearch", request.query),
                    ("srlimit", limit),
                    ("sroffset", str(offset)),
                    ("srprop", "snippet"),
                    ("format", "json"),
                    ("formatversion", "2"),
                ],
            )
        honoured = paging_honoured(request)
        return json_get(
            base + path, params, base=base, language=self.instance_language(config), honoured=honoured
        )

    def instance_language(self, config: InstanceConfig) -> str | None:
        """The wiki's language: the `language` extra, else the subdomain of a `*.wikipedia.org` baseUrl.

        The dispatcher routes a request's locale to the instance whose language matches.
        """
        explicit = config.extra("language")
        if explicit:
            return explicit.strip().lower()
        try:
            host = urlsplit(config.base_url or DEFAULT_BASE_URL).hostname or ""
        except ValueError:
            return None
        match = _WIKI_HOST.match(host)
        return match.group(1) if match else None

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "wikipedia")
        base = str(spec.state.get("base") or DEFAULT_BASE_URL)
        note = None
        if request.expert_params:
            note = unsupported_note(request, _honoured(request, spec.state.get("language")))
        if "errors" in data or "error" in data:
            return SearchPage(error_message=_error_text(data))
        following = None
        if "pages" in data:
            pages = expect(data["pages"], list, "wikipedia pages")
            hits = [_rest_hit(p, base, request.modality) for p in pages if isinstance(p, dict)]
            # REST says nothing of more results: a full page may have more, at the Action API's offset
            following = next_offset(0, min(request.max_results, MAX_LIMIT), len(pages))
        elif "query" in data:
            query = expect(data["query"], dict, "wikipedia query")
            found = expect(query.get("search", []), list, "query.search")
            hits = [_action_hit(p, base, request.modality) for p in found if isinstance(p, dict)]
            suggestion = text(obj(query.get("searchinfo")).get("suggestion"))
            if not hits and suggestion:
                note = f"did you mean: {suggestion}"
            sroffset = as_int(obj(data.get("continue")).get("sroffset"))
            following = {"offset": str(sroffset)} if sroffset and found else None
        elif "extract" in data and "titles" in data:
            hits = [_summary_hit(data, request.modality)]
        else:
            raise ParseError("wikipedia: body has neither pages, query nor a summary")
        return SearchPage(tuple(filter(None, hits))[: request.max_results], note=note, next_page=following)


def _honoured(request: SearchRequest, language: object) -> set[str]:
    """`language` is honoured when this instance's wiki is in that language (the dispatcher routes
    by it); another language is named in the note rather than silently answered in English."""
    wanted = request.expert_params.get("language", "").lower().replace("_", "-").split("-")[0]
    if wanted and isinstance(language, str) and language.split("-")[0] == wanted:
        return {"language"}
    return set()


_KEY_SAFE = string.ascii_letters + string.digits + "_.-~(),:"
"""The characters `quote(key, safe="_()-,:")` leaves as they are."""


def _article_url(base: str, key: str) -> str:
    key = key.replace(" ", "_")
    # `str.rstrip` answers "all safe?" in one C call; most keys are, and `quote` costs twice as much
    return f"{base}/wiki/{key if not key.rstrip(_KEY_SAFE) else quote(key, safe='_()-,:')}"


def _rest_hit(page: dict[str, Any], base: str, modality: Modality) -> SearchHit | None:
    title = text(page.get("title"))
    key = text(page.get("key")) or title
    if not title or not key:
        return None
    excerpt = strip_html(text(page.get("excerpt")))
    description = text(page.get("description"))
    extras: dict[str, Any] = {}  # pageId, description, thumbnailUrl: those the page has
    page_id = as_int(page.get("id"))
    if page_id is not None:
        extras["pageId"] = page_id
    if description is not None:
        extras["description"] = description
    thumbnail = page.get("thumbnail")
    if thumbnail:  # null in most pages
        url = _extract_thumbnail(obj(thumbnail).get("url"))
        if url is not None:
            extras["thumbnailUrl"] = url
    # positional: title, url, modality, snippet, source, content, extras (a keyword call costs more)
    return SearchHit(
        title,
        _article_url(base, key),
        modality,
        excerpt or description,
        "wikipedia",
        embedded(excerpt, None),
        extras,
    )


def _action_hit(page: dict[str, Any], base: str, modality: Modality) -> SearchHit | None:
    title = text(page.get("title"))
    if not title:
        return None
    snippet = strip_html(text(page.get("snippet"))) or None
    page_id = as_int(page.get("pageid"))
    return SearchHit(
        title=title,
        url=_article_url(base, title),
        modality=modality,
        snippet=snippet,
        source="wikipedia",
        content=embedded(snippet, mime_type=None),
        extras={"pageId": page_id} if page_id is not None else {},
    )


def _summary_hit(data: dict[str, Any], modality: Modality) -> SearchHit:
    title, url = _extract_summary_identity(data)
    extract = text(data.get("extract")) or ""
    description = text(data.get("description"))
    extras: dict[str, Any] = {
        "pageId": as_int(data.get("pageid")),
        "description": description,
        "thumbnailUrl": _extract_thumbnail(obj(data.get("thumbnail")).get("source")),
    }
    return SearchHit(
        title=title,
        url=url,
        modality=modality,
        snippet=description or extract[:300] or None,
        source="wikipedia",
        content=embedded(extract, mime_type=None),
        extras={k: v for k, v in extras.items() if v is not None},
    )


def _extract_summary_identity(data: dict[str, Any]) -> tuple[str, str]:
    """A page summary names one article: without its title and URL the body is not a summary."""
    title = text(obj(data.get("titles")).get("normalized")) or text(data.get("title"))
    url = text(obj(obj(data.get("content_urls")).get("desktop")).get("page"))
    if not title or not url:
        raise ParseError("wikipedia summary: missing title or content_urls.desktop.page")
    return title, url


def _extract_thumbnail(value: Any) -> str | None:
    """A thumbnail URL; the REST search API sends them protocol-relative (`//upload.wikimedia.org/…`)."""
    thumb = text(value)
    return "https:" + thumb if thumb and thumb.startswith("//") else thumb


def _error_text(data: dict[str, Any]) -> str:
    errors = data.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        first = errors[0]
        return f"wikipedia error {first.get('code')}: {first.get('text') or first.get('*') or ''}".strip()
    error = data.get("error")
    if isinstance(error, dict):
        return f"wikipedia error {error.get('code')}: {error.get('info') or ''}".strip()
    return "wikipedia error"


PROTOCOL = WikipediaProtocol()

"""GDELT DOC 2.0 — worldwide online news in 65 languages, monitored as it is published.

`GET https://api.gdeltproject.org/api/v2/doc/doc?query=…&mode=artlist&format=json&maxrecords=N
&sort=hybridrel`. No key. Each article has its URL, title, outlet domain, language, source country,
first-seen time and a social image. Searches cover the last three months unless dated.

Docs: https://blog.gdeltproject.org/gdelt-doc-2-0-api-debuts/

    research.endpoint.gdelt.protocol: gdelt
    research.endpoint.gdelt.baseUrl: https://api.gdeltproject.org      # `/api/v2/doc/doc` is appended
    research.endpoint.gdelt.timespan: 1w                               # optional: default 3 months

Quirks:
- Errors come back as **plain text with HTTP 200** ("One or more of your keywords were too short, too
  long or too common", "The specified phrase is too short", "Invalid query"…): read as a soft error
  (the request was wrong, not the provider). "Please limit requests to one every 5 seconds" in a 200
  benches the endpoint for a minute, as a 429 does.
- No match is JSON without an `articles` key (often just `{}`).
- `seendate` is `YYYYMMDDTHHMMSSZ` (read into ISO-8601); `language` is an English name ("Malayalam").
- Some bodies carry invalid JSON escapes (`\\'`): such a body is repaired and read again.
- The only published limit is the 429 text itself: one request every 5 seconds, and an IP that keeps
  bursting stays blocked for hours. Requests without a User-Agent are refused more often.
- `maxrecords` is 75 by default and at most 250; `startdatetime`/`enddatetime` are `YYYYMMDDHHMMSS`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..contract.enums import Modality
from ..contract.errors import ParseError
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import SearchHit
from ._polite import identifying_headers
from ._text import expect
from ._web import compact, endpoint, hostname, http_url, json_get, listed_page, text_for

DEFAULT_BASE_URL = "https://api.gdeltproject.org"
MAX_RECORDS = 250
PACE_SECONDS = 5.0
"""GDELT's stated limit: "one every 5 seconds"."""
SLOW_DOWN_PAUSE = 60.0
"""The cooldown when GDELT asks a client to slow down: it blocks IPs that keep calling, so a minute
rather than the five seconds it names (the same as any 429 without `Retry-After`)."""
MAX_ERROR_TEXT = 2000
"""A plain-text body longer than this is not one of GDELT's error sentences."""
_SEENDATE = re.compile(r"^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$")
_BAD_ESCAPE = re.compile(r'\\(?!["\\/bfnrtu])')
_PACE_TEXT = "limit requests"


class GdeltProtocol:
    id = "gdelt"
    display_name = "GDELT (DOC 2.0)"
    modalities = frozenset({Modality.NEWS})
    key_required = False
    html_in_text = False
    filters = frozenset({"includeDomains", "excludeDomains", "timeRange"})
    """`domain:`/`-domain:` in `query`; `timespan` 1d/1w/1m (GDELT reaches three months back, so
    `year` is its whole window: not expressed, reported ignored)."""
    default_rate_per_second = 1 / PACE_SECONDS
    prompt_hint = (
        "**GDELT** — worldwide online news in 65 languages from the last three months, with outlet, "
        "country, language and publication time. Best for current events and how outlets around the "
        "world cover them; headlines only, no article text."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        query, honoured = _query(request)
        params: list[tuple[str, str]] = [
            ("query", query),
            ("mode", "artlist"),
            ("format", "json"),
            ("maxrecords", str(min(request.max_results, MAX_RECORDS))),
            ("sort", "hybridrel"),
        ]
        expert = request.expert_params
        if expert.get("dateFrom"):
            params.append(("startdatetime", expert["dateFrom"].replace("-", "") + "000000"))
        if expert.get("dateTo"):
            params.append(("enddatetime", expert["dateTo"].replace("-", "") + "235959"))
        span = _TIMESPAN.get(request.filters.time_range or "")
        if span and not expert.get("dateTo"):
            params.append(("timespan", span))
            honoured.add("timeRange")
        elif not (expert.get("dateFrom") or expert.get("dateTo")) and config.extra("timespan"):
            params.append(("timespan", str(config.extra("timespan"))))
        honoured |= {"dateFrom", "dateTo"}
        return json_get(
            endpoint(config, DEFAULT_BASE_URL, "/api/v2/doc/doc"),
            params,
            identifying_headers(config),
            honoured=sorted(honoured),
        )

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = _decode(raw.body)
        if isinstance(data, str):  # GDELT's plain-text error sentence
            pause = SLOW_DOWN_PAUSE if _PACE_TEXT in data.lower() else None
            return SearchPage(error_message=f"gdelt: {data}", backoff_seconds=pause)
        data = expect(data, dict, "gdelt")
        articles = data.get("articles", [])
        articles = expect(articles, list, "gdelt articles")
        honoured = set(spec.state.get("honoured", ()))
        return listed_page(articles, _hit, request, honoured)

    def describe_error(self, raw: RawResponse) -> str | None:
        """The 429's plain-text sentence ("Please limit requests to one every 5 seconds…")."""
        decoded = _plain_text(raw.body)
        return decoded.strip()[:300] if decoded else None


_TIMESPAN = {"day": "1d", "week": "1w", "month": "1m"}
"""`timeRange` → GDELT's `timespan` (its DOC API reaches back three months at most)."""


def _query(request: SearchRequest) -> tuple[str, set[str]]:
    """The query with GDELT operators: `domain:` (a host) for `site`; the expert `domain` is a
    subject hint, not a host, and GDELT has no subject filter."""
    parts, honoured = [request.query], set()
    value = (request.expert_params.get("site") or "").strip().lower().removeprefix("www.")
    if value and "/" not in value and " " not in value:
        parts.append(f"domain:{value}")
        honoured.add("site")
    filters = request.filters
    if filters.include_domains:
        terms = [f"domain:{d}" for d in filters.include_domains]
        parts.append(terms[0] if len(terms) == 1 else "(" + " OR ".join(terms) + ")")
        honoured.add("includeDomains")
    if filters.exclude_domains:
        parts.extend(f"-domain:{d}" for d in filters.exclude_domains)
        honoured.add("excludeDomains")
    return " ".join(parts), honoured


def _plain_text(body: bytes) -> str | None:
    """`body` as text when it is a short human sentence (not JSON, not HTML, not binary)."""
    if not body.strip() or len(body) > MAX_ERROR_TEXT:
        return None
    try:
        decoded = body.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    if decoded[:1] in ("{", "[", "<") or not all(c.isprintable() or c in "\r\n\t" for c in decoded):
        return None
    return decoded


def _decode(body: bytes) -> Any:
    """The JSON body, repaired once if GDELT put invalid escapes in it; a plain-text error as `str`."""
    try:
        return json.loads(body)
    except RecursionError:
        raise ParseError("gdelt: body is not JSON (nested too deeply)") from None
    except UnicodeDecodeError:
        raise ParseError("gdelt: body is not UTF-8") from None
    except ValueError:
        pass
    sentence = _plain_text(body)
    if sentence is not None:
        return sentence
    try:
        return json.loads(_BAD_ESCAPE.sub(r"\\\\", body.decode("utf-8")))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise ParseError("gdelt: body is neither JSON nor an error sentence") from None


def _seen(value: Any) -> str | None:
    match = _SEENDATE.match(value) if isinstance(value, str) else None
    if not match:
        return None
    y, mo, d, h, mi, s = match.groups()
    return f"{y}-{mo}-{d}T{h}:{mi}:{s}Z"


def _hit(article: dict[str, Any], modality: Modality) -> SearchHit | None:
    title, url = text(article.get("title")), http_url(article.get("url"))
    if not title or not url:
        return None
    outlet = text(article.get("domain")) or hostname(url)
    country = text(article.get("sourcecountry"))
    extras = {
        "publishedAt": _seen(article.get("seendate")),
        "outlet": outlet,
        "language": text(article.get("language")),
        "sourceCountry": country,
        "imageUrl": http_url(article.get("socialimage")),
        "mobileUrl": http_url(article.get("url_mobile")),
    }
    return SearchHit(
        title=title,
        url=url,
        modality=modality,
        snippet=" · ".join(p for p in (outlet, country) if p) or None,
        source="gdelt",
        extras=compact(extras),
    )


PROTOCOL = GdeltProtocol()
text = text_for(PROTOCOL)

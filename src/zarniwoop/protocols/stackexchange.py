"""Stack Exchange — questions and answers of Stack Overflow and the other Stack Exchange sites.

`GET https://api.stackexchange.com/2.3/search/advanced?q=…&site=stackoverflow&order=desc&sort=
relevance&pagesize=N&filter=withbody`. No key needed (300 requests a day per IP); an app key
(`apiKey`, or the operator's `STACKEXCHANGE_KEY`) raises that to 10,000. Serves CODE and, after
the web sources, WEB.

Docs: https://api.stackexchange.com/docs/advanced-search (throttles: https://api.stackexchange.com/docs/throttle)

    research.endpoint.stackexchange.protocol: stackexchange
    research.endpoint.stackexchange.site: superuser           # optional, default stackoverflow
    research.endpoint.stackexchange.apiKey: ${env:STACKEXCHANGE_KEY}   # optional

Quirks:
- Every response is compressed ("we guarantee that all responses are compressed"), and a missing
  `Content-Encoding` means gzip: a body that still starts with the gzip magic bytes is inflated
  here (capped, so a hostile body cannot balloon).
- Any answer may carry `backoff` (seconds): no call to the same method before it has passed. It is
  honoured as a cooldown of the endpoint (every modality: they all call `/search/advanced`).
- `quota_max`/`quota_remaining` report the daily quota of the IP (or key): read into a
  provider-reported quota.
- Errors come as `{"error_id", "error_name", "error_message"}`; a spent quota or too many requests
  is `error_id` 502 `throttle_violation` whose message says "more requests available in N seconds".
- Titles and bodies are HTML with entities (`&#39;`); dates are epoch seconds.
"""

from __future__ import annotations

import re
import zlib
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from ..contract.enums import Modality
from ..contract.errors import ParseError
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import QuotaStatus, SearchHit
from ._text import as_int, expect, load_object, obj, strip_html
from ._web import described_hit, endpoint, error_text, http_url, json_get, listed_page, refusal, text

DEFAULT_BASE_URL = "https://api.stackexchange.com"
DEFAULT_SITE = "stackoverflow"
MAX_PAGESIZE = 100
ERROR_KEYS = ("error_message", "error_name")
"""Where the API puts a failure's reason (`error_id` is only its number)."""
MAX_INFLATED = 8 * 1024 * 1024
"""An inflated body larger than this is not a search answer (a gzip bomb, say): refused."""
THROTTLE_DEFAULT = 60.0
"""The wait when a throttle violation names no number ("cut off for ~30 s to minutes")."""
_GZIP_MAGIC = b"\x1f\x8b"
_AVAILABLE_IN = re.compile(r"available in (\d+) seconds?")
_KEY_ERRORS = frozenset({"key_required", "access_denied", "invalid_key"})


class StackExchangeProtocol:
    id = "stackexchange"
    display_name = "Stack Exchange"
    modalities = frozenset({Modality.CODE, Modality.WEB})
    key_required = False
    html_in_text = True
    probes_allowed = False
    """300 calls a day without a key: a reachability probe every few minutes would eat it."""
    env_key = "STACKEXCHANGE_KEY"
    default_rate_per_second = 1.0
    """Well below the 30 requests/s that get an IP cut off; the daily quota is the real limit."""
    prompt_hint = (
        "**Stack Exchange** — questions and answers from Stack Overflow (or another Stack Exchange site), "
        "with score, answered state and tags. Best for programming errors, how-to questions and "
        "practical fixes; answers are community opinions."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        params: list[tuple[str, str]] = [
            ("q", request.query),
            ("site", (config.extra("site") or DEFAULT_SITE).strip()),
            ("order", "desc"),
            ("sort", "relevance"),
            ("pagesize", str(min(request.max_results, MAX_PAGESIZE))),
            ("filter", "withbody"),
        ]
        params += _date_params(request.expert_params)
        if config.api_key:
            params.append(("key", config.api_key.reveal()))
        return json_get(
            endpoint(config, DEFAULT_BASE_URL, "/2.3/search/advanced"), params, {"Accept-Encoding": "gzip"}
        )

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(inflate(raw.body), "stackexchange")
        backoff = _seconds(data.get("backoff"))
        if "items" not in data:
            return refusal(data, "stackexchange", "items", *ERROR_KEYS, backoff_seconds=backoff)
        items = expect(data["items"], list, "stackexchange items")
        return listed_page(
            items,
            _hit,
            request,
            {"dateFrom", "dateTo"},
            total=as_int(data.get("total")),
            quota=_quota(data),
            backoff_seconds=backoff,
        )

    def describe_error(self, raw: RawResponse) -> str | None:
        return error_text(_inflated(raw), *ERROR_KEYS)

    def rejects_key(self, raw: RawResponse) -> bool:
        """A wrong or unknown key is HTTP 400 `bad_parameter` naming `key`, or 401/403 by name."""
        name = (error_text(_inflated(raw), "error_name") or "").lower()
        message = (error_text(_inflated(raw), "error_message") or "").lower()
        return name in _KEY_ERRORS or (name == "bad_parameter" and "key" in message.split())

    def throttled(self, raw: RawResponse) -> float | None:
        """`throttle_violation` (HTTP 502): wait as long as the message says."""
        inflated = _inflated(raw)
        if (error_text(inflated, "error_name") or "") != "throttle_violation":
            return None
        match = _AVAILABLE_IN.search(error_text(inflated, "error_message") or "")
        return float(match.group(1)) if match else THROTTLE_DEFAULT


def inflate(body: bytes) -> bytes:
    """The body, inflated when it is still gzip (Stack Exchange's default when no encoding was sent)."""
    if not body.startswith(_GZIP_MAGIC):
        return body
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, MAX_INFLATED + 1)
    except zlib.error as exc:
        raise ParseError(f"stackexchange: broken gzip body ({exc})") from None
    if len(out) > MAX_INFLATED:
        raise ParseError(f"stackexchange: inflated body exceeds {MAX_INFLATED} bytes")
    return out


def _inflated(raw: RawResponse) -> RawResponse:
    try:
        return RawResponse(raw.status, raw.headers, inflate(raw.body), raw.url)
    except ParseError:
        return raw


def _date_params(expert: Any) -> list[tuple[str, str]]:
    """`fromdate`/`todate` in epoch seconds (UTC; `todate` inclusive of its whole day)."""
    out = []
    if expert.get("dateFrom"):
        start = datetime.combine(date.fromisoformat(expert["dateFrom"]), time.min, UTC)
        out.append(("fromdate", str(int(start.timestamp()))))
    if expert.get("dateTo"):
        end = datetime.combine(date.fromisoformat(expert["dateTo"]) + timedelta(days=1), time.min, UTC)
        out.append(("todate", str(int(end.timestamp()) - 1)))
    return out


def _seconds(value: Any) -> float | None:
    seconds = as_int(value)
    return float(seconds) if seconds is not None and 0 < seconds < 86_400 else None


def _quota(data: dict[str, Any]) -> QuotaStatus | None:
    limit, remaining = as_int(data.get("quota_max")), as_int(data.get("quota_remaining"))
    if limit is None or remaining is None or limit <= 0:
        return None
    return QuotaStatus(used=max(0, limit - remaining), limit=limit, period="day", source="provider")


def _iso(epoch: Any) -> str | None:
    seconds = as_int(epoch)
    if seconds is None or not 0 < seconds < 2**33:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hit(question: dict[str, Any], modality: Modality) -> SearchHit | None:
    title, url = text(question.get("title")), http_url(question.get("link"))
    if not title or not url:
        return None
    body = strip_html(question.get("body") if isinstance(question.get("body"), str) else None)
    tags = question.get("tags")
    answered = question.get("is_answered")
    extras = {
        "score": as_int(question.get("score")),
        "answered": answered if isinstance(answered, bool) else None,
        "answerCount": as_int(question.get("answer_count")),
        "acceptedAnswerId": as_int(question.get("accepted_answer_id")),
        "viewCount": as_int(question.get("view_count")),
        "tags": [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else None,
        "author": text(obj(question.get("owner")).get("display_name")),
        "questionId": as_int(question.get("question_id")),
        "createdAt": _iso(question.get("creation_date")),
        "lastActivityAt": _iso(question.get("last_activity_date")),
    }
    return described_hit(title, url, modality, "stackexchange", body, extras)


PROTOCOL = StackExchangeProtocol()

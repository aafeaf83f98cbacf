"""Helpers shared by the protocols, most of them speaking JSON over HTTP (web engines, keyless APIs).

The request (`json_get`, `json_post`, the key's header), the page (hits built from a listing, the
provider's refusal, the note on unhonoured params), query operators for expert parameters,
language/region from a request, host names, DOIs, rate-limit headers read into a `QuotaStatus`,
and the error text a provider puts in a body. Each protocol declares only what differs.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urlsplit

from ..contract.clock import http_date
from ..contract.errors import ParseError
from ..contract.protocol import RequestSpec, SearchPage, carries_html
from ..contract.results import QuotaStatus, SearchHit
from ._text import as_int, embedded, load_json, shorten, strip_html, unsupported_note

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from ..contract.enums import Modality
    from ..contract.protocol import InstanceConfig, RawResponse, SearchProtocol
    from ..contract.query import SearchRequest

_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>?#]+)", re.IGNORECASE)
_ARXIV_ABS = re.compile(r"^https?://(?:www\.|export\.)?arxiv\.org/abs/([^?#]+?)(?:v\d+)?/?$")


def query_with_operators(request: SearchRequest, *, filetype: str | None = None) -> tuple[str, set[str]]:
    """The query with `site:` / `filetype:` operators for the expert params that map onto them.

    `site` becomes `site:` (a search engine restricts to a host and its subdomains). `domain` never
    does: the tool schema calls it a subject hint (`sports`, `BIOMEDICAL`), and `site:sports` would
    ask for a host that does not exist — a web engine has no subject filter, so it stays unhonoured
    and the page's note says so. `filetype` forces a file type (PDF modality). Returns the query
    and the names of the expert params it honoured.
    """
    expert = request.expert_params
    parts = [request.query]
    honoured: set[str] = set()
    if expert.get("site"):
        parts.append(f"site:{expert['site']}")
        honoured.add("site")
    wanted = filetype or expert.get("filetype")
    if wanted:
        parts.append(f"filetype:{wanted.lower().lstrip('.')}")
        if expert.get("filetype") and (
            filetype is None or expert["filetype"].lower().lstrip(".") == filetype
        ):
            honoured.add("filetype")
    return " ".join(parts), honoured


def site_hosts(request: SearchRequest) -> list[str]:
    """`site` as a host list (for APIs with an include-domains filter); `domain` is a subject hint,
    never a host (see `query_with_operators`)."""
    value = request.expert_params.get("site")
    if not value:
        return []
    parts = split_url(value if "//" in value else f"//{value}")
    return [((parts.netloc if parts else "") or value).lower()]


def language(request: SearchRequest) -> str | None:
    """The language to ask for: the expert `language`, else the locale's language (`de-AT` → `de`)."""
    value = request.filters.language or request.expert_params.get("language") or request.locale
    if not value:
        return None
    return value.replace("_", "-").split("-")[0].lower() or None


def region(request: SearchRequest) -> str | None:
    """The `region` filter, else the locale's region, in lower case (`en-GB` → `gb`)."""
    if request.filters.region:
        return request.filters.region.lower()
    if not request.locale:
        return None
    parts = request.locale.replace("_", "-").split("-")
    return parts[1].lower() if len(parts) > 1 and len(parts[1]) == 2 else None


def split_url(url: Any) -> SplitResult | None:
    """`urlsplit` that returns None instead of raising on junk such as `http://[::1`."""
    if not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url)
        parts.hostname  # noqa: B018 - parses the netloc, which can raise on a bad IPv6 literal
    except ValueError:
        return None
    return parts


def hostname(url: Any) -> str | None:
    """`www.bbc.com` → `bbc.com`; None for anything that is not an absolute URL."""
    parts = split_url(url)
    host = parts.hostname if parts else None
    return host.removeprefix("www.") if host else None


def find_doi(*texts: Any) -> str | None:
    """The first DOI in a URL or text (`https://doi.org/10.1/x` → `10.1/x`)."""
    for text in texts:
        if isinstance(text, str):
            match = _DOI.search(text)
            if match:
                return match.group(1).rstrip(".,;)")
    return None


def pdf_url_for(url: Any) -> str | None:
    """A PDF link derivable from a landing URL: the URL itself when it ends in .pdf, arXiv's /pdf/."""
    parts = split_url(url)
    if parts is None or not isinstance(url, str):  # split_url already refuses non-strings; this narrows
        return None
    if parts.path.lower().endswith(".pdf"):
        return url
    match = _ARXIV_ABS.match(url)
    if match:
        return f"https://arxiv.org/pdf/{match.group(1)}"
    return None


def text(value: Any) -> str | None:
    """A non-empty string of a wire that carries HTML, tags stripped and entities decoded, or None."""
    if not isinstance(value, str):
        return None
    cleaned = strip_html(value)
    return cleaned or None


def plain_text(value: Any) -> str | None:
    """A non-empty string of a plain-text wire, whitespace folded and `<`/`&` kept as sent, or None."""
    if not isinstance(value, str):
        return None
    return " ".join(value.split()) or None


def text_for(protocol: SearchProtocol) -> Callable[[Any], str | None]:
    """How `protocol`'s parser reads a string field, by what it declares its wire carries
    (`contract.protocol.carries_html`): `text` where HTML, `plain_text` where none."""
    return text if carries_html(protocol) else plain_text


def http_url(value: Any) -> str | None:
    """`value` if it is an absolute http(s) URL (a protocol-relative `//host/…` made https), else None.

    Providers echo whatever was submitted (`javascript:`, relative paths, ""): only web links
    become hit URLs and link extras."""
    url = text(value)
    if url and url.startswith("//"):
        url = "https:" + url
    return url if url and url.startswith(("http://", "https://")) else None


def json_filters(
    request: SearchRequest, body: dict[str, Any], honoured: set[str], *, sites: str, since: str, until: str
) -> None:
    """The expert filters a JSON search API takes as body fields, added to `body` and `honoured`:
    `site` as a host list under `sites`, `dateFrom`/`dateTo` as given under `since`/`until`."""
    include = site_hosts(request)
    if include:
        body[sites] = include
        honoured.add("site")
    for param, key in (("dateFrom", since), ("dateTo", until)):
        if param in request.expert_params:
            body[key] = request.expert_params[param]
            honoured.add(param)


def endpoint(config: InstanceConfig, default: str, path: str = "") -> str:
    """The URL of `path` on the endpoint: its `baseUrl` (a mirror, a self-hosted instance, a test
    server), else the provider's public `default`; a trailing slash of either is dropped."""
    return (config.base_url or default).rstrip("/") + path


def json_post(url: str, body: dict[str, Any], auth: dict[str, str], **state: Any) -> RequestSpec:
    """A search sent as a JSON POST; `auth` is the key's header (empty without a key)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json", **auth}
    return RequestSpec(method="POST", url=url, headers=headers, json_body=body, state=state)


def json_get(
    url: str, params: Iterable[tuple[str, str]], headers: Mapping[str, str] | None = None, **state: Any
) -> RequestSpec:
    """A search sent as a GET with query parameters, answered in JSON; `headers` add to (or replace)
    the `Accept`, `state` is what the parser reads back (`honoured`, the page asked for, …)."""
    sent = {"Accept": "application/json", **headers} if headers else {"Accept": "application/json"}
    return RequestSpec(method="GET", url=url, params=tuple(params), headers=sent, state=state)


def key_header(config: InstanceConfig, name: str, scheme: str = "") -> dict[str, str]:
    """The endpoint's key as the header `name` (after `scheme`, e.g. `Bearer `); nothing without a key."""
    return {name: f"{scheme}{config.api_key.reveal()}"} if config.api_key else {}


def refusal(data: dict[str, Any], source: str, listing: str, *message_keys: str, **page: Any) -> SearchPage:
    """The page for a JSON body without its `listing`: the provider's message, from the first of
    `message_keys` (dotted paths, as in `error_text`) that holds one, as the page's error (`page`
    adds fields such as a backoff); `ParseError` where the body says nothing."""
    for key in message_keys:
        message = text(_at(data, key))
        if message:
            return SearchPage(error_message=f"{source}: {message}", **page)
    raise ParseError(f"{source}: body has no {listing}")


def built_hits(
    items: list[Any], build: Callable[[dict[str, Any]], SearchHit | None]
) -> tuple[SearchHit, ...]:
    """The hits `build` makes of the JSON objects among `items` (it answers None for one it cannot cite)."""
    return tuple(h for h in (build(item) for item in items if isinstance(item, dict)) if h)


def listed_page(
    items: list[Any],
    build: Callable[..., SearchHit | None],
    request: SearchRequest,
    honoured: set[str],
    **page: Any,
) -> SearchPage:
    """The page of the hits `build(item, modality=…)` makes of `items` for the request's modality, at
    most `max_results` of them, whose note names the expert params outside `honoured`; `page` carries
    the rest (`total`, `next_page`, …)."""
    hits = built_hits(items, partial(build, modality=request.modality))
    return SearchPage(hits=hits[: request.max_results], note=unsupported_note(request, honoured), **page)


def honoured_page(
    hits: tuple[SearchHit, ...], request: SearchRequest, spec: RequestSpec, raw: RawResponse
) -> SearchPage:
    """A page whose note names the expert params the request did not honour (`spec.state["honoured"]`),
    with the quota the rate-limit headers state."""
    note = unsupported_note(request, set(spec.state.get("honoured", ())))
    return SearchPage(hits=hits, note=note, quota=quota_from_headers(raw))


def identity(
    item: dict[str, Any], url_key: str, read: Callable[[Any], str | None] = text
) -> tuple[str, str] | None:
    """A result's title (read as its wire carries it: `text_for`) and URL (under `url_key`), both
    required: a hit without either cannot be cited."""
    title, url = read(item.get("title")), item.get(url_key)
    return (title, url) if title and isinstance(url, str) and url else None


def cited_hit(
    item: dict[str, Any],
    url_key: str,
    modality: Modality,
    source: str,
    snippet: str | None,
    extras: dict[str, Any],
    read: Callable[[Any], str | None] = text,
) -> SearchHit | None:
    """A web engine's result as a hit (`identity`, extras `compact`-ed), or None where it cannot be cited."""
    found = identity(item, url_key, read)
    if found is None:
        return None
    return SearchHit(found[0], found[1], modality, snippet, source, None, compact(extras))


def described_hit(
    title: str,
    url: str,
    modality: Modality,
    source: str,
    description: str | None,
    extras: dict[str, Any],
    mime_type: str = "text/plain",
) -> SearchHit:
    """A hit whose description (an abstract, a post's body) is both its snippet, shortened, and its
    inline text; extras `compact`-ed."""
    return SearchHit(
        title, url, modality, shorten(description), source, embedded(description, mime_type), compact(extras)
    )


def compact(extras: dict[str, Any]) -> dict[str, Any]:
    """Extras without empty values, so a hit never claims data the provider did not give.

    Non-finite numbers go too: JSON may say `1e999` or `NaN`, and neither survives strict JSON output.
    """
    return {
        k: v
        for k, v in extras.items()
        if v not in (None, "", [], {}) and not (isinstance(v, float) and not math.isfinite(v))
    }


def format_duration(value: Any) -> str | None:
    """`"6:36"` as is; seconds (SearXNG serialises a timedelta as a number) as `m:ss` / `h:mm:ss`."""
    if isinstance(value, str):
        return value.strip() or None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        return None
    total = int(value)
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def quota_from_headers(raw: RawResponse, *, windows: tuple[str, ...] = ()) -> QuotaStatus | None:
    """A provider-counted quota from `X-RateLimit-Limit/Remaining/Reset` (or `RateLimit-*`).

    Some providers send one value per window, comma separated (Brave: `1, 15000` = per second,
    per month); `windows` names them in order and the longest (last) window is reported, since
    that is the budget that runs out. `Reset` is seconds from now; with a `Date` header it
    becomes `resetsAt`.
    """
    limit_raw = raw.header("x-ratelimit-limit") or raw.header("ratelimit-limit")
    remaining_raw = raw.header("x-ratelimit-remaining") or raw.header("ratelimit-remaining")
    if not limit_raw or not remaining_raw:
        return None
    limits = [as_int(v.strip()) for v in limit_raw.split(",")]
    remainders = [as_int(v.strip()) for v in remaining_raw.split(",")]
    if not limits or len(limits) != len(remainders) or None in limits or None in remainders:
        return None
    index = len(limits) - 1
    limit, remaining = limits[index], remainders[index]
    assert limit is not None and remaining is not None
    period = windows[index] if index < len(windows) else "window"
    resets_at = None
    reset_raw = raw.header("x-ratelimit-reset") or raw.header("ratelimit-reset")
    if reset_raw:
        resets = [as_int(v.strip()) for v in reset_raw.split(",")]
        seconds = resets[index] if len(resets) == len(limits) else None
        resets_at = _reset_time(raw.header("date"), seconds)
    return QuotaStatus(
        used=max(0, limit - remaining), limit=limit, period=period, source="provider", resets_at=resets_at
    )


def _reset_time(date_header: str | None, seconds: int | None) -> str | None:
    if seconds is None or not date_header:
        return None
    sent = http_date(date_header)
    if sent is None:
        return None
    return (sent + timedelta(seconds=seconds)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def error_text(raw: RawResponse, *keys: str) -> str | None:
    """The message a provider put in a JSON error body, looked up along `keys` (dotted paths)."""
    try:
        data = load_json(raw.body, "error body")
    except ParseError:
        return None
    for path in keys:
        node = _at(data, path)
        if isinstance(node, str) and node.strip():
            return node.strip()
    return None


def _at(data: Any, path: str) -> Any:
    """The value at a dotted `path` through JSON objects (`detail.error`), else None."""
    node = data
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node

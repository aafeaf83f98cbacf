"""Emulator routes for the keyless APIs of issue 16: commons, peertube, nominatim, github,
stackexchange, crossref, europepmc, gdelt, semanticscholar — serving the shared recorded bodies.

Like `providers_academic.py`, each `add_*` mounts one provider under a path prefix and returns the
`baseUrl` to configure. Routes check what the real API insists on (the required parameters, the
JSON format asked for, GitHub's `Accept`, an identifying User-Agent where the policy demands one)
and, where an optional key is given, the key in the provider's own place — a wrong key is refused
with the provider's own error body:

    base = add_github(emulator, token="ghp_test")    # then `Authorization: Bearer ghp_test` or no header
    settings = endpoint("github", "github", base, apiKey="ghp_test")

`keyless_endpoints(emulator)` mounts every keyless built-in (these nine and the six older ones) and
returns the settings that point each built-in endpoint at its route: a fresh install on loopback.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

from .emulator import Emulator, RecordedRequest, Reply
from .paths import fixture_bytes
from .providers_academic import (
    add_arxiv,
    add_hackernews,
    add_openalex,
    add_openlibrary,
    add_pubmed,
    add_wikipedia,
)

JSON = "application/json; charset=utf-8"
COMMONS_IMAGE = ("wikimedia-commons", "titles-file-imageinfo-extmetadata-tired-cat-details.json")
COMMONS_EMPTY = ("wikimedia-commons", "generator-search-ns6-zero-results-with-suggestion-no-pages.json")
PEERTUBE_SEARCH = ("peertube", "sepiasearch-search-videos-kde-start12-count12.json")
NOMINATIM_SEARCH = ("nominatim", "search-jsonv2-1-place-des-palais-bruxelles-5-results.json")
GITHUB_REPOS = ("github", "search-repositories-github3-language-python-2017.json")
GITHUB_CODE = ("github", "search-code-profile-black-toml-per-page-5-2026.json")
GITHUB_ISSUES = ("github", "search-issues-github3-label-bug-per-page-100-2017.json")
STACKEXCHANGE_SEARCH = ("stackexchange", "search-intitle-java-custom-filter-total-body-2018-test-stub.json")
CROSSREF_WORKS = ("crossref", "works-query-ecology-query-author-boettiger-20-items.json")
EUROPEPMC_SEARCH = ("europepmc", "search-cancer-resulttype-core-pagesize-25.json")
GDELT_ARTLIST = ("gdelt", "artlist-vizhinjam-jun-jul-2024-4-articles-reindented.json")
GDELT_TOO_SHORT = ("gdelt", "error-200-keyword-too-short-plaintext.txt")
S2_SEARCH = ("semantic-scholar", "paper-search-match-title-chemistry-tools-rich-fields.json")

Answer = Callable[[RecordedRequest], Reply]


def _get(check: Callable[[RecordedRequest], Reply | None], answer: Answer) -> Answer:
    def route(request: RecordedRequest) -> Reply:
        if request.method != "GET":
            return Reply(status=405)
        refused = check(request)
        return refused if refused is not None else answer(request)

    return route


def _body(body: bytes | tuple[str, str]) -> bytes:
    return body if isinstance(body, bytes) else fixture_bytes(*body)


def _identified(request: RecordedRequest) -> bool:
    """A User-Agent that names an application (Wikimedia's and Nominatim's policies)."""
    agent = request.header("user-agent") or ""
    return bool(agent) and not agent.startswith(("python-httpx", "python-requests", "curl"))


def add_commons(
    emu: Emulator, prefix: str = "/commons", body: bytes | tuple[str, str] = COMMONS_IMAGE
) -> str:
    """`GET {prefix}/w/api.php?action=query&generator=search&gsrnamespace=6…`; no agent → 403 as Wikimedia does."""
    found, empty = _body(body), fixture_bytes(*COMMONS_EMPTY)

    def check(request: RecordedRequest) -> Reply | None:
        if not _identified(request):
            return Reply(status=403, body=b"Please set a user-agent and respect our robot policy.")
        if request.param("action") != "query" or request.param("format") != "json":
            return Reply.json({"error": {"code": "badvalue", "info": "action=query&format=json expected"}})
        if request.param("gsrnamespace") != "6" or not request.param("gsrsearch"):
            return Reply.json({"error": {"code": "missingparam", "info": "gsrsearch in namespace 6"}})
        return None

    def answer(request: RecordedRequest) -> Reply:
        nothing = "zzzz" in (request.param("gsrsearch") or "")
        return Reply(body=empty if nothing else found, headers={"Content-Type": JSON})

    emu.add(f"{prefix}/w/api.php", _get(check, answer))
    return emu.url + prefix


def add_peertube(
    emu: Emulator, prefix: str = "/peertube", body: bytes | tuple[str, str] = PEERTUBE_SEARCH
) -> str:
    """`GET {prefix}/api/v1/search/videos?search=…`; problem+json 400 without `search`."""
    found = _body(body)

    def check(request: RecordedRequest) -> Reply | None:
        if not request.param("search"):
            problem = {
                "title": "Bad Request",
                "detail": "Incorrect request parameters: search",
                "status": 400,
            }
            return Reply.json(problem, status=400, headers={"Content-Type": "application/problem+json"})
        return None

    emu.add(
        f"{prefix}/api/v1/search/videos",
        _get(check, lambda _r: Reply(body=found, headers={"Content-Type": JSON})),
    )
    return emu.url + prefix


def add_nominatim(
    emu: Emulator,
    prefix: str = "/nominatim",
    body: bytes | tuple[str, str] | Callable[[RecordedRequest], bytes] = NOMINATIM_SEARCH,
) -> str:
    """`GET {prefix}/search?q=…&format=jsonv2`; a stock library agent is refused (403) as the policy
    says. `body` a recorded one, or one chosen from the request (a page by `exclude_place_ids`)."""
    found = body if callable(body) else _body(body)

    def check(request: RecordedRequest) -> Reply | None:
        if not _identified(request):
            return Reply(status=403, body=b"Access blocked: identify your application (usage policy).")
        if request.param("format") != "jsonv2":
            return Reply.json({"error": {"code": 400, "message": "format must be jsonv2 here"}}, status=400)
        if not request.param("q"):
            return Reply.json({"error": {"code": 400, "message": "Nothing to search for."}}, status=400)
        return None

    def answer(request: RecordedRequest) -> Reply:
        return Reply(body=found(request) if callable(found) else found, headers={"Content-Type": JSON})

    emu.add(f"{prefix}/search", _get(check, answer))
    return emu.url + prefix


def add_github(emu: Emulator, prefix: str = "/github", token: str | None = None) -> str:
    """`GET {prefix}/search/{repositories,code,issues}?q=…`, GitHub's media type required.

    Without a token every call is anonymous; with `token`, `Authorization: Bearer <token>` must match
    (another → 401 "Bad credentials"), and `/search/code` refuses anonymous calls as GitHub does.
    """
    bodies = {"repositories": GITHUB_REPOS, "code": GITHUB_CODE, "issues": GITHUB_ISSUES}

    def make(kind: str) -> Answer:
        found = fixture_bytes(*bodies[kind])

        def check(request: RecordedRequest) -> Reply | None:
            sent = request.header("authorization")
            if sent is not None and sent != f"Bearer {token}":
                return Reply.json({"message": "Bad credentials"}, status=401)
            if kind == "code" and sent is None:
                return Reply.json({"message": "Requires authentication"}, status=401)
            if request.header("accept") != "application/vnd.github+json" or not request.header("user-agent"):
                return Reply.json(
                    {"message": "Send Accept: application/vnd.github+json and a User-Agent"}, 415
                )
            if not request.param("q"):
                return Reply.json({"message": "Validation Failed", "errors": [{"message": "q missing"}]}, 422)
            return None

        def answer(request: RecordedRequest) -> Reply:
            limit = "30" if request.header("authorization") else "10"
            headers = {"Content-Type": JSON, "X-RateLimit-Limit": limit, "X-RateLimit-Remaining": "9"}
            return Reply(body=found, headers=headers)

        return _get(check, answer)

    for kind in bodies:
        emu.add(f"{prefix}/search/{kind}", make(kind))
    return emu.url + prefix


def add_stackexchange(
    emu: Emulator, prefix: str = "/stackexchange", key: str | None = None, backoff: int | None = None
) -> str:
    """`GET {prefix}/2.3/search/advanced?q=…&site=…`, always gzip-compressed as the real API is.

    With `key`, a `key=` parameter must match (another → 400 `bad_parameter`); `backoff` adds that
    field to the answer.
    """
    data = json.loads(fixture_bytes(*STACKEXCHANGE_SEARCH))
    if backoff is not None:
        data["backoff"] = backoff
    found = gzip.compress(json.dumps(data).encode())

    def error(status: int, name: str, message: str) -> Reply:
        body = gzip.compress(
            json.dumps({"error_id": status, "error_name": name, "error_message": message}).encode()
        )
        return Reply(status=status, body=body, headers={"Content-Type": JSON, "Content-Encoding": "gzip"})

    def check(request: RecordedRequest) -> Reply | None:
        sent = request.param("key")
        if sent is not None and sent != key:
            return error(400, "bad_parameter", "key is not valid for passed access_token, token not found.")
        if not request.param("site"):
            return error(400, "bad_parameter", "site is required")
        return None

    def answer(_request: RecordedRequest) -> Reply:
        return Reply(body=found, headers={"Content-Type": JSON, "Content-Encoding": "gzip"})

    emu.add(f"{prefix}/2.3/search/advanced", _get(check, answer))
    return emu.url + prefix


def add_crossref(
    emu: Emulator, prefix: str = "/crossref", body: bytes | tuple[str, str] = CROSSREF_WORKS
) -> str:
    """`GET {prefix}/works?query=…`, with the rate-limit headers Crossref advertises."""
    found = _body(body)

    def check(request: RecordedRequest) -> Reply | None:
        if not (request.param("query") or request.param("filter")):
            failure = {
                "status": "failed",
                "message-type": "validation-failure",
                "message": [{"message": "query?"}],
            }
            return Reply.json(failure, status=400)
        return None

    def answer(request: RecordedRequest) -> Reply:
        pool = "polite" if request.param("mailto") else "public"
        headers = {
            "Content-Type": JSON,
            "x-api-pool": pool,
            "x-rate-limit-limit": "5",
            "x-rate-limit-interval": "1s",
        }
        return Reply(body=found, headers=headers)

    emu.add(f"{prefix}/works", _get(check, answer))
    return emu.url + prefix


def add_europepmc(
    emu: Emulator, prefix: str = "/europepmc", body: bytes | tuple[str, str] = EUROPEPMC_SEARCH
) -> str:
    """`GET {prefix}/search?query=…&format=json`; without `format=json` the XML default answers."""
    found = _body(body)

    def check(request: RecordedRequest) -> Reply | None:
        if request.param("format") != "json":
            return Reply(body=b"<responseWrapper/>", headers={"Content-Type": "application/xml"})
        if not request.param("query"):
            return Reply.json({"errMsg": "query is required"})
        return None

    def answer(request: RecordedRequest) -> Reply:
        return Reply(body=found(request) if callable(found) else found, headers={"Content-Type": JSON})

    emu.add(f"{prefix}/search", _get(check, answer))
    return emu.url + prefix


def add_gdelt(emu: Emulator, prefix: str = "/gdelt", body: bytes | tuple[str, str] = GDELT_ARTLIST) -> str:
    """`GET {prefix}/api/v2/doc/doc?query=…&mode=artlist&format=json`; a query of one or two letters
    gets GDELT's plain-text error with HTTP 200."""
    found, too_short = _body(body), fixture_bytes(*GDELT_TOO_SHORT)

    def check(request: RecordedRequest) -> Reply | None:
        if request.param("mode") != "artlist" or request.param("format") != "json":
            return Reply(body=b"Invalid mode or format.", headers={"Content-Type": "text/html"})
        if len((request.param("query") or "").split(" domain:")[0]) < 3:
            return Reply(body=too_short, headers={"Content-Type": "text/html; charset=utf-8"})
        return None

    emu.add(
        f"{prefix}/api/v2/doc/doc", _get(check, lambda _r: Reply(body=found, headers={"Content-Type": JSON}))
    )
    return emu.url + prefix


def add_semanticscholar(
    emu: Emulator, prefix: str = "/s2", body: bytes | tuple[str, str] = S2_SEARCH, key: str | None = None
) -> str:
    """`GET {prefix}/graph/v1/paper/search?query=…`; with `key`, an `x-api-key` must match (else 403)."""
    found = _body(body)

    def check(request: RecordedRequest) -> Reply | None:
        sent = request.header("x-api-key")
        if sent is not None and sent != key:
            return Reply.json({"message": "Forbidden"}, status=403)
        if not request.param("query"):
            return Reply.json({"error": "Missing required parameter: 'query'"}, status=400)
        return None

    emu.add(
        f"{prefix}/graph/v1/paper/search",
        _get(check, lambda _r: Reply(body=found, headers={"Content-Type": JSON})),
    )
    return emu.url + prefix


KEYLESS_MOUNTS: dict[str, Callable[[Emulator], str]] = {
    "wikipedia": add_wikipedia,
    "openalex": add_openalex,
    "crossref": add_crossref,
    "semanticscholar": add_semanticscholar,
    "europepmc": add_europepmc,
    "arxiv": add_arxiv,
    "pubmed": add_pubmed,
    "openlibrary": add_openlibrary,
    "gdelt": add_gdelt,
    "hackernews": add_hackernews,
    "github": add_github,
    "stackexchange": add_stackexchange,
    "commons": add_commons,
    "peertube": add_peertube,
    "nominatim": add_nominatim,
}
"""Every keyless built-in endpoint (by id) and the route that emulates its API."""


def keyless_endpoints(emu: Emulator) -> dict[str, Any]:
    """Mount every keyless built-in and return the settings pointing each built-in endpoint at it."""
    return {f"research.endpoint.{i}.baseUrl": mount(emu) for i, mount in KEYLESS_MOUNTS.items()}

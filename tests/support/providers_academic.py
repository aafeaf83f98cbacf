"""Emulator routes speaking the keyless providers' wire APIs, serving the shared recorded bodies.

Each `add_*` mounts one provider under a path prefix of the emulator and returns the `baseUrl` to
configure, so several providers (or several instances of one) share one emulator:

    base = add_arxiv(emulator)                       # → f"{emulator.url}/arxiv"
    settings = endpoint("arxiv", "arxiv", base)

Routes check what the real API needs (method, required parameters, PubMed's two calls chained by
ids) and answer 400 with the provider's own error shape otherwise, so a wrong request fails the
test instead of passing silently.
"""

from __future__ import annotations

from collections.abc import Callable

from .emulator import Emulator, RecordedRequest, Reply
from .paths import fixture_bytes

ATOM = "application/atom+xml; charset=utf-8"
XML = "text/xml; charset=UTF-8"
JSON = "application/json; charset=utf-8"

ARXIV_SEARCH = ("arxiv", "query-search-testing-start0-max10.xml")
ARXIV_EMPTY = ("arxiv", "query-empty-feed-unknown-id.xml")
ARXIV_ERROR = ("arxiv", "query-error-malformed-id.xml")
PUBMED_ESEARCH = ("pubmed", "esearch-biopython-term.xml")
PUBMED_ESEARCH_EMPTY = ("pubmed", "esearch-empty-phrase-not-found-protein-db.xml")
PUBMED_ESUMMARY = ("pubmed", "esummary-pubmed-two-ids.xml")
PUBMED_EFETCH = ("pubmed", "efetch-pubmedarticleset-two-articles.xml")
OPENLIBRARY_SEARCH = ("openlibrary", "search-time-war-2020.json")
HN_SEARCH = ("hackernews", "search-query-stephen-2018.json")
HN_BY_DATE = ("hackernews", "search-by-date-tags-story-trump-2020.json")
WIKI_SEARCH = ("wikipedia", "core-rest-search-page-linksto-shell.json")
OPENALEX_WORKS = ("openalex", "works-filter-title-search-paperqa.json")


def _bad(message: str) -> Reply:
    """Algolia's / Open Library's JSON error shape."""
    return Reply.json({"message": message, "status": 400}, status=400)


def add_arxiv(
    emu: Emulator,
    prefix: str = "/arxiv",
    body: tuple[str, str] | Callable[[RecordedRequest], bytes] = ARXIV_SEARCH,
) -> str:
    """`GET {prefix}/api/query?search_query=…`; a query with `id:abc` answers the HTTP 400 error feed.
    `body`: a recorded body, or one chosen from the request (a page by `start`)."""
    error = fixture_bytes(*ARXIV_ERROR)  # read here, not in the server thread
    found = body if callable(body) else fixture_bytes(*body)

    def route(request: RecordedRequest) -> Reply:
        if request.method != "GET":
            return Reply(status=405)
        query = request.param("search_query") or request.param("id_list")
        if not query or "id:abc" in query:
            return Reply(status=400, body=error, headers={"Content-Type": ATOM})
        return Reply(body=found(request) if callable(found) else found, headers={"Content-Type": ATOM})

    emu.add(f"{prefix}/api/query", route)
    return emu.url + prefix


def add_pubmed(
    emu: Emulator,
    prefix: str = "/pubmed",
    esearch: tuple[str, str] = PUBMED_ESEARCH,
    api_key: str | None = None,
) -> str:
    """`esearch.fcgi` → `esummary.fcgi?id=<ids from esearch>` → `efetch.fcgi?id=<pmid>`.

    With `api_key`, a request carrying a different `api_key` is refused as NCBI does (HTTP 400 JSON).
    """
    search_body, summary_body, fetch_body = (
        fixture_bytes(*esearch),
        fixture_bytes(*PUBMED_ESUMMARY),
        fixture_bytes(*PUBMED_EFETCH),
    )

    def common(request: RecordedRequest) -> Reply | None:
        if request.method != "GET":
            return Reply(status=405)
        if request.param("db") != "pubmed":
            return Reply(body=b"<eSearchResult><ERROR>Invalid db name specified</ERROR></eSearchResult>")
        sent = request.param("api_key")
        if api_key is not None and sent not in (None, api_key):
            # NCBI's answer echoes the key it refused; it must never reach an error message.
            return Reply.json({"error": "API key invalid", "api-key": sent, "type": "invalid"}, status=400)
        return None

    def esearch_route(request: RecordedRequest) -> Reply:
        problem = common(request)
        if problem is not None:
            return problem
        if not request.param("term"):
            return Reply(
                body=b"<eSearchResult><ERROR>Empty term and query_key - nothing todo</ERROR></eSearchResult>"
            )
        return Reply(body=search_body, headers={"Content-Type": XML})

    def esummary_route(request: RecordedRequest) -> Reply:
        problem = common(request)
        if problem is not None:
            return problem
        ids = (request.param("id") or "").split(",")
        if not ids or not all(i.isdigit() for i in ids):
            return Reply(body=b"<eSummaryResult><ERROR>Empty id list - nothing todo</ERROR></eSummaryResult>")
        return Reply(body=summary_body, headers={"Content-Type": XML})

    def efetch_route(request: RecordedRequest) -> Reply:
        problem = common(request)
        if problem is not None:
            return problem
        if not (request.param("id") or "").isdigit():
            return Reply(status=400, body=b"Cannot process ID list", headers={"Content-Type": "text/plain"})
        return Reply(body=fetch_body, headers={"Content-Type": XML})

    emu.add(f"{prefix}/esearch.fcgi", esearch_route)
    emu.add(f"{prefix}/esummary.fcgi", esummary_route)
    emu.add(f"{prefix}/efetch.fcgi", efetch_route)
    return emu.url + prefix


def add_openlibrary(
    emu: Emulator, prefix: str = "/openlibrary", body: tuple[str, str] = OPENLIBRARY_SEARCH
) -> str:
    """`GET {prefix}/search.json?q=…`."""
    found = fixture_bytes(*body)

    def route(request: RecordedRequest) -> Reply:
        if request.method != "GET":
            return Reply(status=405)
        if not (request.param("q") or request.param("title") or request.param("author")):
            return _bad("query is required")
        return Reply(body=found, headers={"Content-Type": JSON})

    emu.add(f"{prefix}/search.json", route)
    return emu.url + prefix


def add_hackernews(emu: Emulator, prefix: str = "/hn") -> str:
    """`GET {prefix}/api/v1/search` (relevance body) and `/api/v1/search_by_date` (newest-first body)."""

    def make(body: tuple[str, str]):
        found = fixture_bytes(*body)

        def route(request: RecordedRequest) -> Reply:
            if request.method != "GET":
                return Reply(status=405)
            if request.param("query") is None:
                return _bad("query is required")
            return Reply(body=found, headers={"Content-Type": JSON})

        return route

    emu.add(f"{prefix}/api/v1/search", make(HN_SEARCH))
    emu.add(f"{prefix}/api/v1/search_by_date", make(HN_BY_DATE))
    return emu.url + prefix


def add_wikipedia(
    emu: Emulator,
    prefix: str = "/wiki",
    body: tuple[str, str] | bytes = WIKI_SEARCH,
    action: Callable[[RecordedRequest], bytes] | None = None,
) -> str:
    """`GET {prefix}/w/rest.php/v1/search/page?q=…&limit=N`; with `action`, also the Action API's
    `GET {prefix}/w/api.php?action=query&list=search&srsearch=…` (later pages), answered by it."""
    found = body if isinstance(body, bytes) else fixture_bytes(*body)

    def route(request: RecordedRequest) -> Reply:
        if request.method != "GET":
            return Reply(status=405)
        if not request.param("q"):
            return Reply(
                status=400, body=b'{"errorKey":"rest-missing-body-field"}', headers={"Content-Type": JSON}
            )
        return Reply(body=found, headers={"Content-Type": JSON})

    def search(request: RecordedRequest) -> Reply:
        if request.param("action") != "query" or request.param("list") != "search":
            return Reply.json({"errors": [{"code": "badvalue", "text": "action=query&list=search expected"}]})
        if not request.param("srsearch"):
            return Reply.json(
                {"errors": [{"code": "missingparam", "text": 'The "srsearch" parameter must be set.'}]}
            )
        assert action is not None
        return Reply(body=action(request), headers={"Content-Type": JSON})

    emu.add(f"{prefix}/w/rest.php/v1/search/page", route)
    if action is not None:
        emu.add(f"{prefix}/w/api.php", search)
    return emu.url + prefix


def add_openalex(
    emu: Emulator,
    prefix: str = "/openalex",
    body: tuple[str, str] | Callable[[RecordedRequest], bytes] = OPENALEX_WORKS,
) -> str:
    """`GET {prefix}/works?search=…`, with the RateLimit headers OpenAlex sends; `body` a recorded
    one, or one chosen from the request (a page by `page`)."""
    found = body if callable(body) else fixture_bytes(*body)

    def route(request: RecordedRequest) -> Reply:
        if request.method != "GET":
            return Reply(status=405)
        if not (request.param("search") or request.param("filter")):
            return Reply(
                status=400,
                body=b'{"error":"Invalid query parameters error."}',
                headers={"Content-Type": JSON},
            )
        headers = {"Content-Type": JSON, "RateLimit-Limit": "100000", "RateLimit-Remaining": "99990"}
        return Reply(body=found(request) if callable(found) else found, headers=headers)

    emu.add(f"{prefix}/works", route)
    return emu.url + prefix

"""Europe PMC — 45M+ life-science abstracts and 10M full-text articles (PubMed, PMC, preprints, patents).

`GET https://www.ebi.ac.uk/europepmc/webservices/rest/search?query=…&format=json&resultType=core
&pageSize=N`. No key. `resultType=core` adds the abstract, the author list and the full-text links
to each record (`lite` has none of them).

Docs: https://europepmc.org/RestfulWebService

    research.endpoint.europepmc.protocol: europepmc
    research.endpoint.europepmc.baseUrl: https://www.ebi.ac.uk/europepmc/webservices/rest   # `/search` is appended

Quirks:
- `format=json` must be asked for: XML is the default.
- Identities: `pmid` (MEDLINE records), `pmcid` (`PMC…`, full text in PMC) and `doi` — each hit carries
  those it has, so the same work from PubMed, OpenAlex or Crossref merges with it.
- `source` says which collection a record is from (`MED`, `PMC`, `PPR` preprints, `PAT`, `AGR`…); the
  article page is `https://europepmc.org/article/{source}/{id}`.
- Flags are the strings "Y"/"N"; `pubYear` is a string; `abstractText` is HTML-ish (`<h4>`, `<b>`).
- Paging is by `cursorMark`; no `nextCursorMark` means the last page. No match: `hitCount` 0 and an
  empty `resultList.result`.
- No official rate limit is published; the default pace stays low (5/s).
"""

from __future__ import annotations

from typing import Any

from ..contract.enums import Modality
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import SearchHit
from ._filters import paging_honoured, resumed_text, time_range_start
from ._polite import polite_get
from ._text import as_int, embedded, expect, load_object, obj, shorten, strip_html
from ._web import compact, error_text, http_url, listed_page, refusal, text

DEFAULT_BASE_URL = "https://www.ebi.ac.uk/europepmc/webservices/rest"
ARTICLE_URL = "https://europepmc.org/article/{source}/{id}"
MAX_PAGE_SIZE = 100
ERROR_KEYS = ("errMsg", "errorMessage", "message")
"""Where Europe PMC puts the reason of a failure, in a 200 without `resultList` or an error status."""


class EuropePmcProtocol:
    id = "europepmc"
    display_name = "Europe PMC"
    modalities = frozenset({Modality.ACADEMIC})
    key_required = False
    html_in_text = True
    filters = frozenset({"timeRange", "page"})
    """`FIRST_PDATE:[…]` for `timeRange`; pages by `cursorMark` (`nextCursorMark`)."""
    default_rate_per_second = 5.0
    """No published limit; third-party guides quote 10/s per IP, half of that is safe."""
    prompt_hint = (
        "**Europe PMC** — life-science and biomedical literature (all of PubMed plus PMC full texts, "
        "preprints, patents and guidelines) with abstracts, PMIDs, PMCIDs and DOIs. Best for biology, "
        "medicine and health research; open-access full texts where available."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        query = request.query
        expert = request.expert_params
        honoured = paging_honoured(request)
        since = time_range_start(request)
        if since is not None:
            query = f"({query}) AND FIRST_PDATE:[{since.isoformat()} TO 3000-12-31]"
            honoured.append("timeRange")
        elif expert.get("dateFrom") or expert.get("dateTo"):
            start, end = expert.get("dateFrom") or "1800-01-01", expert.get("dateTo") or "3000-12-31"
            query = f"({query}) AND FIRST_PDATE:[{start} TO {end}]"
        params: list[tuple[str, str]] = [
            ("query", query),
            ("format", "json"),
            ("resultType", "core"),
            ("pageSize", str(min(request.max_results, MAX_PAGE_SIZE))),
            ("cursorMark", resumed_text(request, "cursor") or "*"),
        ]
        return polite_get(config, DEFAULT_BASE_URL, "/search", params, "email", honoured=honoured)

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "europepmc")
        if "resultList" not in data:
            return refusal(data, "europepmc", "resultList", *ERROR_KEYS)
        records = expect(obj(data["resultList"]).get("result", []), list, "europepmc result")
        return listed_page(
            records,
            _hit,
            request,
            {"dateFrom", "dateTo"},
            total=as_int(data.get("hitCount")),
            next_page=_next_cursor(data, len(records)),
        )

    def describe_error(self, raw: RawResponse) -> str | None:
        return error_text(raw, *ERROR_KEYS)


def _authors(record: dict[str, Any]) -> list[str]:
    listed = obj(record.get("authorList")).get("author")
    if isinstance(listed, list):
        names = [text(obj(a).get("fullName")) or text(obj(a).get("collectiveName")) for a in listed]
        found = [n for n in names if n]
        if found:
            return found
    names_line = (text(record.get("authorString")) or "").rstrip(".")
    return [n.strip() for n in names_line.split(",") if n.strip()]


def _pdf(record: dict[str, Any]) -> str | None:
    """A free full-text PDF link, if Europe PMC lists one."""
    links = obj(record.get("fullTextUrlList")).get("fullTextUrl")
    for link in links if isinstance(links, list) else ():
        entry = obj(link)
        url = http_url(entry.get("url"))
        if url and entry.get("documentStyle") == "pdf" and entry.get("availabilityCode") in ("OA", "F"):
            return url
    return None


def _flag(value: Any) -> bool | None:
    return {"Y": True, "N": False}.get(value) if isinstance(value, str) else None


def _hit(record: dict[str, Any], modality: Modality) -> SearchHit | None:
    title = text(record.get("title"))
    source, record_id = text(record.get("source")), text(record.get("id"))
    if not title or not source or not record_id:
        return None
    journal = obj(obj(record.get("journalInfo")).get("journal"))
    abstract = strip_html(record.get("abstractText") if isinstance(record.get("abstractText"), str) else None)
    pmcid = text(record.get("pmcid"))
    extras = {
        "pmid": text(record.get("pmid")),
        "pmcid": pmcid,
        "doi": text(record.get("doi")),
        "authors": _authors(record),
        "year": as_int(record.get("pubYear")),
        "venue": text(journal.get("title")) or text(record.get("journalTitle")),
        "citedByCount": as_int(record.get("citedByCount")),
        "pdfUrl": _pdf(record),
        "openAccess": _flag(record.get("isOpenAccess")),
        "publishedAt": text(record.get("firstPublicationDate")),
        "collection": source,
    }
    return SearchHit(
        title=title.rstrip(".") if title.endswith(".") and not title.endswith("..") else title,
        url=ARTICLE_URL.format(source=source, id=record_id),
        modality=modality,
        snippet=shorten(abstract) or text(record.get("journalTitle")),
        source="europepmc",
        content=embedded(abstract),
        extras=compact(extras),
    )


PROTOCOL = EuropePmcProtocol()


def _next_cursor(data: dict[str, Any], got: int) -> dict[str, str] | None:
    """Europe PMC's `nextCursorMark`; the last page repeats the cursor it was asked with."""
    mark = data.get("nextCursorMark")
    return {"cursor": mark} if got and isinstance(mark, str) and mark and mark != "*" else None

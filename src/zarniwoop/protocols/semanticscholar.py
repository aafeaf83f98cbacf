"""Semantic Scholar — the Allen Institute's index of 200M+ papers, with citation graph and open PDFs.

`GET https://api.semanticscholar.org/graph/v1/paper/search?query=…&limit=N&fields=…`. No key needed;
keyless calls share one small global pool, so they get 429s at busy times. A free key (`apiKey`, or
the operator's `SEMANTIC_SCHOLAR_API_KEY`, sent as `x-api-key`) gets a dedicated 1 request/s.

Docs: https://api.semanticscholar.org/api-docs/graph#tag/Paper-Data/operation/get_graph_paper_relevance_search

    research.endpoint.semanticscholar.protocol: semanticscholar
    research.endpoint.semanticscholar.apiKey: ${env:SEMANTIC_SCHOLAR_API_KEY}   # optional

Quirks:
- Only the fields named in `fields=` come back (`paperId` always); without `url` the paper page is
  `https://www.semanticscholar.org/paper/{paperId}`.
- `externalIds` holds the identities (`DOI`, `ArXiv`, `PubMed`, `PubMedCentral`, `CorpusId`, `DBLP`):
  read into `doi`, `arxivId`, `pmid`, so the same work from Crossref, arXiv or PubMed merges with it.
- No match: `{"total": 0, "offset": 0}` — no `data` key.
- `openAccessPdf` is `{url, status, license}`; `url` may be "" for a closed paper.
- `publicationDateOrYear=2019-03-05:2020-06-06` filters dates (either side open).
- Keyless pool figures disagree (1000/s shared vs 100 per 5 min per IP); 429 `{"message": "Too
  Many Requests…"}` on excess — the default pace is one call per 3 s.
"""

from __future__ import annotations

from typing import Any

from ..contract.enums import Modality
from ..contract.errors import ParseError
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import SearchHit
from ._filters import paging_honoured, resumed_offset, time_range_start
from ._text import as_int, expect, load_object, obj
from ._web import described_hit, endpoint, error_text, http_url, json_get, key_header, listed_page, text_for

DEFAULT_BASE_URL = "https://api.semanticscholar.org"
PAPER_URL = "https://www.semanticscholar.org/paper/{id}"
MAX_LIMIT = 100
FIELDS = (
    "title,url,abstract,year,venue,journal,authors,citationCount,influentialCitationCount,externalIds,"
    "openAccessPdf,publicationDate,isOpenAccess"
)


class SemanticScholarProtocol:
    id = "semanticscholar"
    display_name = "Semantic Scholar"
    modalities = frozenset({Modality.ACADEMIC})
    key_required = False
    html_in_text = False
    filters = frozenset({"timeRange", "page"})
    """`publicationDateOrYear=<since>:` for `timeRange`; pages by `offset` (the body's `next`)."""
    env_key = "SEMANTIC_SCHOLAR_API_KEY"
    default_rate_per_second = 1 / 3
    """Keyless: ≈100 requests per 5 minutes (the per-IP figure S2 support quoted)."""
    default_rate_with_key = 1.0
    """With a key: the introductory 1 request/s."""
    prompt_hint = (
        "**Semantic Scholar** — 200M+ papers across all sciences with abstracts, citation and "
        "influential-citation counts, and open-access PDF links. Best for finding influential papers and "
        "a free PDF; coverage strongest in computer science and biomedicine."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        params: list[tuple[str, str]] = [
            ("query", request.query),
            ("limit", str(min(request.max_results, MAX_LIMIT))),
            ("fields", FIELDS),
        ]
        expert = request.expert_params
        honoured = paging_honoured(request)
        resumed_offset(request, params)
        since = time_range_start(request)
        if since is not None:
            params.append(("publicationDateOrYear", f"{since.isoformat()}:"))
            honoured.append("timeRange")
        elif expert.get("dateFrom") or expert.get("dateTo"):
            params.append(
                ("publicationDateOrYear", f"{expert.get('dateFrom', '')}:{expert.get('dateTo', '')}")
            )
        if expert.get("filetype", "").lower() == "pdf":
            params.append(("openAccessPdf", ""))
        return json_get(
            endpoint(config, DEFAULT_BASE_URL, "/graph/v1/paper/search"),
            params,
            key_header(config, "x-api-key"),
            honoured=honoured,
        )

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "semanticscholar")
        total = as_int(data.get("total"))
        if "data" not in data:
            message = text(data.get("error")) or text(data.get("message"))
            if message:
                return SearchPage(error_message=f"semanticscholar: {message}")
            if total is not None:  # no match: `{"total": 0, "offset": 0}`
                return SearchPage(total=total)
            raise ParseError("semanticscholar: body has no data")
        papers = expect(data["data"], list, "semanticscholar data")
        honoured = {"dateFrom", "dateTo"} | (
            {"filetype"} if request.expert_params.get("filetype", "").lower() == "pdf" else set()
        )
        following = as_int(data.get("next"))  # the offset of the next page; absent on the last one
        return listed_page(
            papers,
            _hit,
            request,
            honoured,
            total=total,
            next_page={"offset": str(following)} if following and papers else None,
        )

    def describe_error(self, raw: RawResponse) -> str | None:
        return error_text(raw, "error", "message")


def _identity(ids: dict[str, Any], name: str) -> str | None:
    value = ids.get(name)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return text(value)


def _pmcid(value: str | None) -> str | None:
    """S2 gives the bare number (`11116106`); PMC ids are written `PMC11116106` everywhere else."""
    return f"PMC{value}" if value and value.isdigit() else value


def _hit(paper: dict[str, Any], modality: Modality) -> SearchHit | None:
    title = text(paper.get("title"))
    paper_id = text(paper.get("paperId"))
    url = http_url(paper.get("url")) or (PAPER_URL.format(id=paper_id) if paper_id else None)
    if not title or not url:
        return None
    ids = obj(paper.get("externalIds"))
    abstract = text(paper.get("abstract"))
    authors = paper.get("authors")
    extras = {
        "doi": _identity(ids, "DOI"),
        "arxivId": _identity(ids, "ArXiv"),
        "pmid": _identity(ids, "PubMed"),
        "pmcid": _pmcid(_identity(ids, "PubMedCentral")),
        "corpusId": _identity(ids, "CorpusId"),
        "s2PaperId": paper_id,
        "authors": [n for n in (text(obj(a).get("name")) for a in authors) if n]
        if isinstance(authors, list)
        else None,
        "year": as_int(paper.get("year")),
        "venue": text(obj(paper.get("journal")).get("name")) or text(paper.get("venue")),
        "citedByCount": as_int(paper.get("citationCount")),
        "influentialCitationCount": as_int(paper.get("influentialCitationCount")),
        "pdfUrl": http_url(obj(paper.get("openAccessPdf")).get("url")),
        "publishedAt": text(paper.get("publicationDate")),
    }
    return described_hit(title, url, modality, "semanticscholar", abstract, extras)


PROTOCOL = SemanticScholarProtocol()
text = text_for(PROTOCOL)

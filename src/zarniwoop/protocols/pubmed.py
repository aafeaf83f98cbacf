"""PubMed — MEDLINE and life-science journal citations, through the NCBI E-utilities.

A search is two calls, both pure here: `esearch.fcgi` finds the PMIDs, its page carries the
`esummary.fcgi` request for those ids (`SearchPage.next_request`, ids in `RequestSpec.state`),
and that second page holds the hits. Abstracts are not in the summaries: each hit points at
`efetch.fcgi` as a STASH_ON_DEMAND reference, which the content store loads when asked and turns
into text with `parse_efetch`.

Docs: https://www.ncbi.nlm.nih.gov/books/NBK25499/  (DTDs: https://eutils.ncbi.nlm.nih.gov/eutils/dtd/)

    research.endpoint.pubmed.protocol: pubmed
    research.endpoint.pubmed.apiKey: ${env:NCBI_API_KEY}       # optional: 10 calls/s instead of 3
    research.endpoint.pubmed.contactEmail: research@example.org  # sent as `email`, as NCBI asks
    research.endpoint.pubmed.tool: my-agent                      # sent as `tool` (default zarniwoop)

Quirks:
- No results is HTTP 200 with `Count` 0, an empty `<IdList/>` and `<ErrorList><PhraseNotFound>`.
- A bad request (unknown db, …) is HTTP 200 with `<ERROR>…</ERROR>` (a soft error).
- `esummary` v1 XML is a list of `<DocSum>` with typed `<Item Name=… Type=…>` children.
- `efetch` abstracts are one or more `<AbstractText>`, with `Label="BACKGROUND"` etc. in structured
  abstracts and inline markup (`<i>`, `<sup>`) to flatten.
- Date filters are `mindate`/`maxdate` (YYYY/MM/DD) with `datetype=pdat`; NCBI wants both bounds.
- The API key travels as the `api_key` query parameter, so it is never put into a content reference.
- Every body is parsed with defusedxml: the DOCTYPE line is allowed, entity declarations are not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from ..contract.enums import ContentInline, Modality, SearchDomain
from ..contract.errors import InvalidRequestError, ParseError
from ..contract.filters import TIME_RANGE_DAYS
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import ContentRef, QuotaStatus, SearchHit
from ._filters import next_offset, paging_honoured, resumed_int
from ._text import as_int, unsupported_note
from ._web import error_text, quota_from_headers
from ._xml import child, child_text, children, local, parse_xml, text_of

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

DEFAULT_BASE_URL = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
ARTICLE_URL = "https://pubmed.ncbi.nlm.nih.gov/{pmid}/"
MAX_RETMAX = 100
DEFAULT_TOOL = "zarniwoop"

LANGUAGES = {
    "en": "english", "de": "german", "fr": "french", "es": "spanish", "it": "italian",
    "pt": "portuguese", "nl": "dutch", "ru": "russian", "ja": "japanese", "zh": "chinese",
    "pl": "polish", "sv": "swedish", "da": "danish", "no": "norwegian", "fi": "finnish",
    "ko": "korean", "tr": "turkish", "cs": "czech", "hu": "hungarian", "el": "greek",
}  # fmt: skip
"""ISO 639-1 → the language names PubMed's `[la]` field accepts."""

_PMID = re.compile(r"^\d{1,12}$")


class PubMedProtocol:
    id = "pubmed"
    display_name = "PubMed"
    modalities = frozenset({Modality.ACADEMIC})
    known_extras = frozenset({"tool", "contactEmail"})
    domains = frozenset({SearchDomain.BIOMEDICAL, SearchDomain.ACADEMIC})
    key_required = False
    html_in_text = False
    filters = frozenset({"timeRange", "page"})
    """`datetype=pdat&reldate=<days>` for `timeRange`; pages by `retstart`."""
    env_key = "NCBI_API_KEY"
    default_rate_per_second = 3.0
    default_rate_with_key = 10.0
    """NCBI: 3 requests/s per IP without a key, 10/s with one; over it → HTTP 429."""
    prompt_hint = (
        "**PubMed** — 36M+ citations of biomedical and life-science literature (MEDLINE): medicine, "
        "clinical trials, pharmacology, genetics, public health. Best for health and biology questions; "
        "abstracts are loaded on demand, no full text."
    )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        base = _base(config)
        term = request.query
        language = request.expert_params.get("language", "")
        name = LANGUAGES.get(language.lower().split("-")[0]) if language else None
        if name:
            term = f"({term}) AND {name}[la]"
        params: list[tuple[str, str]] = [
            ("db", "pubmed"),
            ("term", term),
            ("retstart", str(retstart := resumed_int(request, "offset", 0))),
            ("retmax", str(min(request.max_results, MAX_RETMAX))),
            ("sort", "relevance"),
        ]
        start, end = request.expert_params.get("dateFrom"), request.expert_params.get("dateTo")
        honoured = paging_honoured(request)
        days = TIME_RANGE_DAYS.get(request.filters.time_range or "")
        if days:  # NCBI's own relative range: the last `reldate` days of publication dates
            params += [("datetype", "pdat"), ("reldate", str(days))]
            honoured.append("timeRange")
        elif start or end:
            params += [
                ("datetype", "pdat"),
                ("mindate", (start or "1800-01-01").replace("-", "/")),
                ("maxdate", (end or "3000-12-31").replace("-", "/")),
            ]
        return RequestSpec(
            method="GET",
            url=f"{base}/esearch.fcgi",
            params=tuple(params) + _identity(config),
            headers={"Accept": "application/xml"},
            step="esearch",
            state={"base": base, "identity": _identity(config), "honoured": honoured, "retstart": retstart},
        )

    def describe_error(self, raw: RawResponse) -> str | None:
        """NCBI's reason in a non-2xx body: JSON `{"error": "API key invalid", …}` (which also echoes
        the key — only `error` is taken) or an XML `<ERROR>`."""
        return error_text(raw, "error") or _xml_error(raw.body)

    def rejects_key(self, raw: RawResponse) -> bool:
        """NCBI answers a wrong `api_key` with HTTP 400 `{"error": "API key invalid"}`: an auth failure."""
        return raw.status == 400 and "api key" in (error_text(raw, "error") or "").lower()

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        if spec.step == "esummary":
            return self._parse_esummary(raw, spec, request)
        return self._parse_esearch(raw, spec, request)

    def _parse_esearch(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        root = parse_xml(raw.body, "pubmed esearch")
        if local(root.tag) != "eSearchResult":
            raise ParseError(f"pubmed esearch: expected <eSearchResult>, got <{local(root.tag) or '?'}>")
        error = child_text(root, "ERROR")
        if error:
            return SearchPage(error_message=f"pubmed: {error}")
        total = as_int(child_text(root, "Count"))
        id_list = child(root, "IdList")
        ids = [text_of(e) for e in children(id_list, "Id")] if id_list is not None else []
        ids = [i for i in ids if _PMID.match(i)][: request.max_results]
        note = unsupported_note(request, _honoured(request))
        if not ids:
            errors = child(root, "ErrorList")
            missing = (
                [t for t in (text_of(e) for e in children(errors, "PhraseNotFound")) if t]
                if errors is not None
                else []
            )
            if missing:
                note = "; ".join(filter(None, [note, f"phrase not found: {', '.join(missing)}"]))
            return SearchPage(total=total or 0, note=note, quota=_quota(raw))
        base = str(spec.state.get("base") or DEFAULT_BASE_URL)
        identity = tuple(spec.state.get("identity") or ())
        summary = RequestSpec(
            method="GET",
            url=f"{base}/esummary.fcgi",
            params=(("db", "pubmed"), ("id", ",".join(ids)), *identity),
            headers={"Accept": "application/xml"},
            step="esummary",
            state={
                "base": base,
                "ids": tuple(ids),
                "total": total,
                "note": note,
                "next": next_offset(
                    int(spec.state.get("retstart", 0)), min(request.max_results, MAX_RETMAX), len(ids), total
                ),
            },
        )
        return SearchPage(total=total, note=note, next_request=summary, quota=_quota(raw))

    def _parse_esummary(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        root = parse_xml(raw.body, "pubmed esummary")
        if local(root.tag) != "eSummaryResult":
            raise ParseError(f"pubmed esummary: expected <eSummaryResult>, got <{local(root.tag) or '?'}>")
        error = child_text(root, "ERROR")
        base = str(spec.state.get("base") or DEFAULT_BASE_URL)
        hits = [h for h in (_hit(d, base) for d in children(root, "DocSum")) if h]
        if error and not hits:
            return SearchPage(error_message=f"pubmed: {error}")
        # Keep esearch's relevance order; ids esummary did not return are simply absent.
        order = {pmid: i for i, pmid in enumerate(spec.state.get("ids") or ())}
        hits.sort(key=lambda h: order.get(str(h.extras.get("pmid")), len(order)))
        total = spec.state.get("total")
        return SearchPage(
            hits=tuple(hits[: request.max_results]),
            total=total if isinstance(total, int) else None,
            note=spec.state.get("note"),
            quota=_quota(raw),
            next_page=spec.state.get("next"),
        )

    def load_content(self, ref: ContentRef, config: InstanceConfig) -> RequestSpec:
        """The efetch call for a hit's abstract. Only the PMID is taken from the reference; the host is
        always the configured endpoint's, so a forged reference cannot point the call elsewhere."""
        pmid = pmid_of(ref.ref or "")
        if pmid is None:
            # The caller's mistake, not the provider's: a usage error (exit 2 / 422), no request.
            raise InvalidRequestError("ref", f"pubmed: content reference {ref.ref!r} names no PMID")
        base = _base(config)
        return RequestSpec(
            method="GET",
            url=f"{base}/efetch.fcgi",
            params=(
                ("db", "pubmed"),
                ("id", pmid),
                ("retmode", "xml"),
                ("rettype", "abstract"),
                *_identity(config),
            ),
            headers={"Accept": "application/xml"},
            step="efetch",
        )

    def content_text(self, body: bytes) -> str:
        """Plain text of an efetch body, for the content store: title, then the (labelled) abstract."""
        articles = parse_efetch(body)
        if not articles:
            raise ParseError("pubmed efetch: no article in the body")
        return "\n\n".join(a.as_text() for a in articles)


@dataclass(frozen=True, slots=True)
class PubmedAbstract:
    pmid: str
    title: str
    text: str
    """The abstract; sections of a structured abstract as `LABEL: text`, separated by blank lines."""
    doi: str | None = None

    def as_text(self) -> str:
        return "\n\n".join(p for p in (self.title, self.text) if p)


def parse_efetch(body: bytes) -> tuple[PubmedAbstract, ...]:
    """Abstracts from an efetch `PubmedArticleSet` (DTD: https://dtd.nlm.nih.gov/ncbi/pubmed/out/).

    >>> parse_efetch(body)[0].text[:20]
    'This study subdivide'
    """
    root = parse_xml(body, "pubmed efetch")
    if local(root.tag) != "PubmedArticleSet":
        raise ParseError(f"pubmed efetch: expected <PubmedArticleSet>, got <{local(root.tag) or '?'}>")
    out: list[PubmedAbstract] = []
    for article in children(root, "PubmedArticle"):
        citation = child(article, "MedlineCitation")
        if citation is None:
            continue
        pmid = child_text(citation, "PMID")
        body_el = child(citation, "Article")
        if not pmid or body_el is None:
            continue
        sections = []
        abstract = child(body_el, "Abstract")
        for part in children(abstract, "AbstractText") if abstract is not None else ():
            for element in part.iter():
                if local(element.tag) == "sup":  # 10<sup>3</sup> reads as 10^3, not 103
                    element.text = "^" + (element.text or "")
            text = text_of(part)
            label = (part.get("Label") or "").strip()
            if text:
                sections.append(f"{label}: {text}" if label else text)
        doi = None
        data = child(article, "PubmedData")
        ids = child(data, "ArticleIdList") if data is not None else None
        for article_id in children(ids, "ArticleId") if ids is not None else ():
            if article_id.get("IdType") == "doi" and text_of(article_id):
                doi = text_of(article_id)
        out.append(PubmedAbstract(pmid, child_text(body_el, "ArticleTitle"), "\n\n".join(sections), doi))
    return tuple(out)


def pmid_of(ref: str) -> str | None:
    """The PMID in a content reference: a bare id, `pubmed:<id>`, or an efetch / article URL."""
    ref = ref.strip().removeprefix("pubmed:")
    if _PMID.match(ref):
        return ref
    split = urlsplit(ref)
    ids = parse_qs(split.query).get("id")
    if ids and _PMID.match(ids[0]):
        return ids[0]
    last = split.path.rstrip("/").rsplit("/", 1)[-1]
    return last if _PMID.match(last) else None


def _base(config: InstanceConfig) -> str:
    return (config.base_url or DEFAULT_BASE_URL).rstrip("/")


def _identity(config: InstanceConfig) -> tuple[tuple[str, str], ...]:
    """`tool`/`email` (NCBI asks every client for them) and the optional `api_key`."""
    out = [("tool", config.extra("tool") or DEFAULT_TOOL)]
    if config.extra("contactEmail"):
        out.append(("email", str(config.extra("contactEmail"))))
    if config.api_key:
        out.append(("api_key", config.api_key.reveal()))
    return tuple(out)


def _honoured(request: SearchRequest) -> set[str]:
    honoured = {"dateFrom", "dateTo"}
    language = request.expert_params.get("language", "")
    if LANGUAGES.get(language.lower().split("-")[0]):
        honoured.add("language")
    return honoured


def _items(doc: Element) -> dict[str, Element]:
    return {item.get("Name") or "": item for item in children(doc, "Item")}


def _hit(doc: Element, base: str) -> SearchHit | None:
    pmid = child_text(doc, "Id")
    items = _items(doc)
    title = text_of(items.get("Title"))
    if not _PMID.match(pmid) or not title:
        return None
    pub_date = text_of(items.get("PubDate"))
    extras: dict[str, Any] = {
        "pmid": pmid,
        "doi": _extract_doi(items),
        "authors": _extract_authors(items),
        "year": as_int(pub_date[:4]) if pub_date[:4].isdigit() else None,
        "venue": text_of(items.get("FullJournalName")) or text_of(items.get("Source")) or None,
        "publishedAt": pub_date or None,
        "pubTypes": [text_of(p) for p in children(items["PubTypeList"], "Item")]
        if "PubTypeList" in items
        else None,
    }
    citation = (
        text_of(items.get("Source")),
        text_of(items.get("SO")),
    )  # "Nature", "2021 Mar;591(7848):92-98"
    return SearchHit(
        title=title,
        url=ARTICLE_URL.format(pmid=pmid),
        modality=Modality.ACADEMIC,
        snippet=" ".join(p for p in citation if p) or None,
        source="pubmed",
        content=_extract_abstract_ref(items, base, pmid),
        extras={k: v for k, v in extras.items() if v not in (None, [])},
    )


def _extract_authors(items: dict[str, Element]) -> list[str]:
    authors = items.get("AuthorList")
    return [name for a in children(authors, "Item") if (name := text_of(a))] if authors is not None else []


def _extract_doi(items: dict[str, Element]) -> str | None:
    ids = items.get("ArticleIds")
    for item in children(ids, "Item") if ids is not None else ():
        if item.get("Name") == "doi" and text_of(item):
            return text_of(item)
    location = text_of(items.get("ELocationID"))
    if location.lower().startswith("doi:"):
        return location[4:].strip() or None
    return None


def _extract_abstract_ref(items: dict[str, Element], base: str, pmid: str) -> ContentRef | None:
    """esummary has no abstract, only whether there is one: efetch loads it on demand."""
    if text_of(items.get("HasAbstract")) != "1":
        return None
    ref = f"{base}/efetch.fcgi?db=pubmed&id={pmid}&retmode=xml&rettype=abstract"
    return ContentRef(ContentInline.STASH_ON_DEMAND, ref=ref, mime_type="text/plain")


def _xml_error(body: bytes) -> str | None:
    try:
        root = parse_xml(body, "pubmed error")
    except ParseError:
        return None
    return child_text(root, "ERROR") or None


def _quota(raw: RawResponse) -> QuotaStatus | None:
    """NCBI sends `X-RateLimit-Limit/Remaining` per second (3 or 10) on E-utilities answers."""
    return quota_from_headers(raw, windows=("second",))


PROTOCOL = PubMedProtocol()

"""Dedup across providers: one work, one entry, every sighting kept.

Identity first (DOI, arXiv id, PMID, ISBN, OpenLibrary work id — a `10.48550/arXiv.X` DOI and arXiv
id `X` are the same work), normalized URL otherwise: scheme and host lower-cased, `www.` dropped,
fragment and tracking parameters (`utm_*`, `fbclid`, `gclid`, …) removed, trailing slash removed.
Agreement across sources raises a hit by reciprocal-rank fusion (Cormack et al. 2009, k = 60).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..contract.results import SearchHit
from .model import HitSource, MergedHit

RRF_K = 60
_TRACKING = re.compile(
    r"^(utm_.*|fbclid|gclid|dclid|msclkid|mc_cid|mc_eid|_ga|ref_src|igshid)$", re.IGNORECASE
)
_ARXIV_ID = re.compile(r"(\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?", re.IGNORECASE)
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.IGNORECASE)
_DOI_IN_URL = re.compile(r"(?:doi\.org/|doi:)(10\.\d{4,9}/\S+)", re.IGNORECASE)


def normalize_url(url: str) -> str:
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.strip()
    host = (parts.hostname or "").lower().removeprefix("www.")
    if parts.port and parts.port not in (80, 443):
        host = f"{host}:{parts.port}"
    query = urlencode(
        [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _TRACKING.match(k)]
    )
    path = parts.path.rstrip("/") or ""
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        scheme = "https"  # http and https of one page are one page
    # A fragment is noise on the web, but it is what tells two passages of one local file apart.
    fragment = parts.fragment if scheme == "file" else ""
    return urlunsplit((scheme, host, path, query, fragment))


def identity_key(hit: SearchHit) -> str | None:
    """A provider-independent identity for works that have one."""
    extras = hit.extras
    doi = str(extras.get("doi") or "").strip().lower().removeprefix("https://doi.org/").removeprefix("doi:")
    if not doi:
        match = _DOI_IN_URL.search(hit.url)
        doi = match.group(1).lower() if match else ""
    if doi:
        arxiv_doi = _ARXIV_DOI.match(doi)
        return f"arxiv:{arxiv_doi.group(1).lower()}" if arxiv_doi else f"doi:{doi}"
    arxiv = str(extras.get("arxivId") or "")
    if not arxiv and "arxiv.org/" in hit.url:
        match = _ARXIV_ID.search(hit.url.split("arxiv.org/", 1)[1])
        arxiv = match.group(1) if match else ""
    if arxiv:
        match = _ARXIV_ID.match(arxiv)
        return f"arxiv:{(match.group(1) if match else arxiv).lower()}"
    for name, prefix in (("pmid", "pmid"), ("isbn", "isbn"), ("workId", "olwork")):
        value = extras.get(name)
        if isinstance(value, list):
            value = value[0] if value else None
        if value:
            return f"{prefix}:{str(value).strip().lower()}"
    return None


def hit_key(hit: SearchHit) -> str:
    return identity_key(hit) or f"url:{normalize_url(hit.url)}"


@dataclass(slots=True)
class _Entry:
    """One work while merging (mutable; frozen into a `MergedHit` at the end)."""

    hit: SearchHit
    sources: list[HitSource] = field(default_factory=list)
    affinity: float = 0.0
    fusion: float = 0.0


def merge(batches: Iterable[tuple[str, str, float, Sequence[SearchHit]]]) -> list[MergedHit]:
    """`(planned query, serving instance, affinity, hits)` batches → merged hits, best fusion first."""
    entries: dict[str, _Entry] = {}
    for query, instance, affinity, hits in batches:
        for rank, hit in enumerate(hits, 1):
            key = hit_key(hit)
            entry = entries.setdefault(key, _Entry(hit))
            if any(s.instance == instance and s.query == query for s in entry.sources):
                continue
            entry.sources.append(HitSource(instance, rank, query))
            entry.affinity = max(entry.affinity, float(affinity))
            entry.fusion += 1.0 / (RRF_K + rank)
            if entry.hit.content is None and hit.content is not None:
                entry.hit = hit  # keep the richer sighting
    merged = [MergedHit(key, e.hit, tuple(e.sources), e.affinity, e.fusion) for key, e in entries.items()]
    return sorted(merged, key=lambda m: m.fusion, reverse=True)

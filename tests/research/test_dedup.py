"""Dedup by identity and normalized URL; agreement across sources raises a hit."""

from __future__ import annotations

import pytest

from zarniwoop.contract import Modality, SearchHit
from zarniwoop.research.dedup import hit_key, merge, normalize_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTPS://WWW.Example.COM/a/b/?utm_source=x&id=3&fbclid=y#frag", "https://example.com/a/b?id=3"),
        ("http://example.com/a/", "https://example.com/a"),
        ("https://example.com/?gclid=1", "https://example.com"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
    ],
)
def test_normalize_url(url, expected):
    assert normalize_url(url) == expected


def hit(url, **extras):
    return SearchHit(title="t", url=url, modality=Modality.ACADEMIC, extras=extras)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (hit("https://doi.org/10.1000/ABC"), hit("https://publisher.example/abc", doi="10.1000/abc")),
        (hit("https://doi.org/10.48550/arXiv.2312.07559"), hit("http://arxiv.org/abs/2312.07559v2")),
        (hit("https://arxiv.org/pdf/2312.07559v1"), hit("https://x.example", arxivId="2312.07559")),
        (hit("https://pubmed.ncbi.nlm.nih.gov/1/", pmid="123"), hit("https://elsewhere/", pmid="123")),
        (
            hit("https://openlibrary.org/works/OL1W", isbn=["9780140449136"]),
            hit("https://b.example", isbn="9780140449136"),
        ),
        (hit("https://www.example.com/page/?utm_medium=x"), hit("http://example.com/page")),
    ],
)
def test_same_work_same_key(a, b):
    assert hit_key(a) == hit_key(b)


def test_merge_keeps_every_source_and_rank_and_fuses():
    paper = hit("https://doi.org/10.1000/x")
    same = hit("https://arxiv.example/x", doi="10.1000/x")
    other = hit("https://example.org/other")
    merged = merge([("q", "openalex", 1.0, [other, paper]), ("q", "pubmed", 1.4, [same])])
    assert [m.key for m in merged] == ["doi:10.1000/x", "url:https://example.org/other"]
    top = merged[0]
    assert [(s.instance, s.rank) for s in top.sources] == [("openalex", 2), ("pubmed", 1)]
    assert top.affinity == 1.4
    assert top.fusion == pytest.approx(1 / 62 + 1 / 61)


def test_passages_of_one_local_file_stay_apart():
    a = SearchHit(title="t", url="file:///notes/plan.md#L10", modality=Modality.INTERNAL_DOC)
    b = SearchHit(title="t", url="file:///notes/plan.md#L40", modality=Modality.INTERNAL_DOC)
    assert hit_key(a) != hit_key(b)
    assert normalize_url("https://example.com/a#section") == "https://example.com/a"

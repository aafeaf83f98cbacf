"""The search contract round-trips through camelCase JSON and validates input naming the field."""

from __future__ import annotations

import pickle
from datetime import date

import pytest

from zarniwoop.contract import (
    Attempt,
    ContentInline,
    ContentRef,
    InvalidRequestError,
    Modality,
    Outcome,
    RateLimitedError,
    SearchHit,
    SearchRequest,
    SearchResult,
    Tier,
)


def sample_result() -> SearchResult:
    hit = SearchHit(
        title="CRISPR off-target effects",
        url="https://doi.org/10.1/x",
        modality=Modality.ACADEMIC,
        snippet="We measure…",
        source="openalex",
        content=ContentRef(
            ContentInline.EMBED_TEXT, text="We measure off-target edits", mime_type="text/plain"
        ),
        extras={"doi": "10.1/x", "authors": ["A. Author"], "year": 2021, "citedByCount": 12},
    )
    return SearchResult(
        query="crispr off-target",
        modality=Modality.ACADEMIC,
        tier=Tier.NORMAL,
        provider_instance_id="openalex",
        hits=(hit,),
        upstream_headers={"x-ratelimit-remaining": "97"},
        attempts=(
            Attempt("pubmed", Outcome.HARD_ERROR, "HTTP 503", 212),
            Attempt("openalex", Outcome.SUCCESS, None, 388),
        ),
    )


def test_result_json_has_the_contract_shape():
    data = sample_result().to_json()
    assert list(data) == [
        "query",
        "modality",
        "tier",
        "providerInstanceId",
        "hits",
        "returnedCount",
        "droppedCount",
        "note",
        "errorMessage",
        "upstreamHeaders",
        "attempts",
        "cached",
        "nextPage",
    ]
    assert data["returnedCount"] == 1
    assert data["attempts"] == [
        {
            "providerInstanceId": "pubmed",
            "outcome": "hard_error",
            "errorMessage": "HTTP 503",
            "durationMs": 212,
        },
        {"providerInstanceId": "openalex", "outcome": "success", "durationMs": 388},
    ]
    assert data["hits"][0]["content"] == {
        "inline": "EMBED_TEXT",
        "text": "We measure off-target edits",
        "mimeType": "text/plain",
    }
    assert data["hits"][0]["modality"] == "ACADEMIC"


def test_result_round_trips():
    result = sample_result()
    assert SearchResult.from_json(result.to_json()) == result


@pytest.mark.parametrize("spelling", ["academic", "ACADEMIC", "Academic", " academic "])
def test_modality_accepts_any_case(spelling):
    assert SearchRequest.create("q", spelling).modality is Modality.ACADEMIC


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"query": "", "modality": "web"}, "query"),
        ({"query": "x" * 2001, "modality": "web"}, "query"),
        ({"query": 42, "modality": "web"}, "query"),
        ({"query": "q", "modality": "telepathy"}, "modality"),
        ({"query": "q", "modality": "web", "max_results": 0}, "maxResults"),
        ({"query": "q", "modality": "web", "max_results": "ten"}, "maxResults"),
        ({"query": "q", "modality": "web", "tier": "ultra"}, "tier"),
        ({"query": "q", "modality": "web", "expert_params": {"colour": "red"}}, "colour"),
        ({"query": "q", "modality": "web", "expert_params": {"dateFrom": "2024-13-01"}}, "dateFrom"),
        (
            {
                "query": "q",
                "modality": "web",
                "expert_params": {"dateFrom": "2025-01-01", "dateTo": "2024-01-01"},
            },
            "dateTo",
        ),
    ],
)
def test_bad_requests_name_the_field(kwargs, field):
    with pytest.raises(InvalidRequestError) as info:
        SearchRequest.create(**kwargs)
    assert info.value.field == field


def test_expert_params_imply_expert_tier():
    request = SearchRequest.create("q", "web", expert_params={"site": "arxiv.org", "dateTo": None})
    assert request.tier is Tier.EXPERT
    assert dict(request.expert_params) == {"site": "arxiv.org"}


def test_today_is_not_part_of_a_requests_identity():
    plain = SearchRequest.create("q", "news", expert_params={"dateFrom": "2025-01-01"})
    dated = plain.on(date(2025, 9, 30))
    assert (dated.today, plain.today) == (date(2025, 9, 30), None)
    assert dated == plain and dated.cache_key() == plain.cache_key()


def test_errors_survive_pickling():
    error = RateLimitedError(7.0, "slow down", instance_id="serper-main")
    clone = pickle.loads(pickle.dumps(error))
    assert (type(clone), clone.retry_after, clone.status, clone.instance_id, str(clone)) == (
        RateLimitedError,
        7.0,
        429,
        "serper-main",
        "slow down",
    )
    bad = pickle.loads(pickle.dumps(InvalidRequestError("query", "too long")))
    assert (bad.field, bad.reason, bad.message) == ("query", "too long", "query: too long")

"""The search filters of issue 47: validation naming the field, and the request's identity."""

from __future__ import annotations

import pytest

from zarniwoop.contract.errors import InvalidRequestError
from zarniwoop.contract.filters import FILTER_NAMES, NO_FILTERS, SearchFilters, domain_matches
from zarniwoop.contract.query import SearchRequest
from zarniwoop.contract.results import IgnoredParam, SearchResult


def test_filters_are_normalised():
    filters = SearchFilters.create(
        include_domains=["Nature.com", "www.science.org"],
        exclude_domains="wikipedia.org",
        time_range="Week",
        safe_search="STRICT",
        language="pt-BR",
        region="br",
        strict="true",
    )
    assert filters.include_domains == ("nature.com", "science.org")
    assert filters.exclude_domains == ("wikipedia.org",)
    assert (filters.time_range, filters.safe_search, filters.region, filters.strict) == (
        "week",
        "strict",
        "BR",
        True,
    )
    assert filters.requested() == FILTER_NAMES[:-1]  # every one but the page
    assert SearchFilters.create() is NO_FILTERS


@pytest.mark.parametrize(
    ("kwargs", "field", "words"),
    [
        ({"include_domains": ["not a domain"]}, "includeDomains", "expected a domain name"),
        ({"exclude_domains": ["https://example.org/x"]}, "excludeDomains", "expected a domain name"),
        ({"exclude_domains": 5}, "excludeDomains", "expected a list of domains"),
        ({"include_domains": [f"d{i}.org" for i in range(21)]}, "includeDomains", "at most 20"),
        (
            {"include_domains": ["a.org"], "exclude_domains": ["a.org"]},
            "excludeDomains",
            "also in includeDomains",
        ),
        ({"time_range": "fortnight"}, "timeRange", "expected one of day, week, month, year"),
        ({"safe_search": "on"}, "safeSearch", "expected one of off, moderate, strict"),
        ({"language": "english!"}, "language", "BCP 47"),
        ({"region": "DEU"}, "region", "ISO 3166-1 alpha-2"),
        ({"page": "not a cursor!"}, "page", "nextPage"),
        ({"strict": "maybe"}, "strictFilters", "true or false"),
    ],
)
def test_a_bad_filter_names_its_field(kwargs, field, words):
    with pytest.raises(InvalidRequestError) as caught:
        SearchFilters.create(**kwargs)
    assert caught.value.field == field
    assert words in caught.value.reason


def test_time_range_and_date_from_conflict():
    with pytest.raises(InvalidRequestError) as caught:
        SearchRequest.create(
            "q",
            "web",
            expert_params={"dateFrom": "2024-01-01"},
            filters=SearchFilters.create(time_range="week"),
        )
    assert caught.value.field == "timeRange"
    assert "dateFrom" in caught.value.reason


def test_every_filter_and_the_page_are_part_of_the_cache_key():
    plain = SearchRequest.create("crispr", "web")
    keys = {
        plain.cache_key(),
        SearchRequest.create(
            "crispr", "web", filters=SearchFilters.create(exclude_domains=["a.org"])
        ).cache_key(),
        SearchRequest.create(
            "crispr", "web", filters=SearchFilters.create(include_domains=["a.org"])
        ).cache_key(),
        SearchRequest.create("crispr", "web", filters=SearchFilters.create(time_range="day")).cache_key(),
        SearchRequest.create("crispr", "web", filters=SearchFilters.create(safe_search="off")).cache_key(),
        SearchRequest.create("crispr", "web", filters=SearchFilters.create(language="de")).cache_key(),
        SearchRequest.create("crispr", "web", filters=SearchFilters.create(region="DE")).cache_key(),
        SearchRequest.create("crispr", "web", filters=SearchFilters.create(page="abc.def")).cache_key(),
        SearchRequest.create("crispr", "web", filters=SearchFilters.create(strict=True)).cache_key(),
    }
    assert len(keys) == 9
    again = SearchRequest.create("CRISPR ", "web", filters=SearchFilters.create(exclude_domains=["A.org"]))
    assert again.cache_key() in keys


def test_domains_match_their_subdomains_only():
    assert domain_matches("en.wikipedia.org", ["wikipedia.org"])
    assert domain_matches("wikipedia.org", ["wikipedia.org"])
    assert not domain_matches("notwikipedia.org", ["wikipedia.org"])


def test_next_page_and_ignored_params_round_trip_through_json():
    from zarniwoop.contract.enums import Modality, Tier

    result = SearchResult(
        "q",
        Modality.WEB,
        Tier.NORMAL,
        "brave",
        next_page="abc.def",
        ignored_params=(IgnoredParam("safeSearch", "brave has no way to express safeSearch on its wire"),),
        dropped_reasons={"excludeDomains": 2},
        dropped_count=2,
    )
    data = result.to_json()
    assert data["nextPage"] == "abc.def"
    assert data["ignoredParams"] == [
        {"param": "safeSearch", "reason": "brave has no way to express safeSearch on its wire"}
    ]
    assert data["droppedReasons"] == {"excludeDomains": 2}
    back = SearchResult.from_json(data)
    assert (back.next_page, back.ignored_params, dict(back.dropped_reasons)) == (
        "abc.def",
        result.ignored_params,
        {"excludeDomains": 2},
    )
    assert SearchResult("q", Modality.WEB, Tier.NORMAL, None).to_json()["nextPage"] is None

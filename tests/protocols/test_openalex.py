"""OpenAlex: the recorded works lists, error bodies, and rebuilt abstracts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import (
    ContentInline,
    InstanceConfig,
    ParseError,
    ProviderHTTPError,
    RawResponse,
    SearchRequest,
)
from zarniwoop.protocols.openalex import PROTOCOL, rebuild_abstract
from zarniwoop.transport.status import raise_for_status

from ..support.fuzz_academic import survives_broken_json
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

CONFIG = InstanceConfig("openalex", "openalex", extras={"contactEmail": "lab@example.org"})


def parse(body: bytes, headers=None, **kw):
    return parse_body(PROTOCOL, CONFIG, "paperqa", "academic", body, headers=headers, **kw)


def test_build_request_with_filters_and_polite_pool():
    request = SearchRequest.create(
        "copper oxide",
        "academic",
        max_results=3,
        expert_params={"dateFrom": "2015-01-01", "language": "en-GB"},
    )
    spec = PROTOCOL.build_request(request, CONFIG)
    assert spec.url == "https://api.openalex.org/works"
    assert dict(spec.params) == {
        "search": "copper oxide",
        "per-page": "3",
        "filter": "from_publication_date:2015-01-01,language:en",
        "mailto": "lab@example.org",
    }


def test_paperqa_work_with_rebuilt_abstract_doi_and_quota():
    page = parse(
        fixture_bytes("openalex", "works-filter-title-search-paperqa.json"),
        headers={"RateLimit-Limit": "100000", "RateLimit-Remaining": "99990"},
    )
    assert page.total == 1
    [hit] = page.hits
    assert hit.title == "PaperQA: Retrieval-Augmented Generative Agent for Scientific Research"
    assert hit.url == "https://doi.org/10.48550/arxiv.2312.07559"
    assert hit.extras["doi"] == "10.48550/arxiv.2312.07559"
    assert hit.extras["year"] == 2023
    assert hit.extras["citedByCount"] == 27
    assert hit.extras["venue"] == "arXiv (Cornell University)"
    assert hit.extras["authors"][:3] == ["Jakub Lála", "Odhran O’Donoghue", "Aleksandar Shtedritski"]
    assert hit.extras["openalexId"] == "https://openalex.org/W4389761608"
    assert hit.content.inline is ContentInline.EMBED_TEXT
    assert hit.content.text.startswith("Large Language Models (LLMs) generalize well across language tasks")
    assert page.quota.limit == 100000 and page.quota.remaining == 99990 and page.quota.source == "provider"


def test_copper_oxide_work():
    page = parse(fixture_bytes("openalex", "works-filter-title-search-copper-oxide.json"))
    [hit] = page.hits
    assert hit.title == (
        "Effect of native oxide layers on copper thin-film tensile properties: A reactive molecular dynamics study"
    )
    assert hit.url == "https://doi.org/10.1063/1.4938384"
    assert hit.extras["authors"] == ["Michael Skarlinski", "David J. Quesnel"]
    assert hit.extras["venue"] == "Journal of Applied Physics"
    assert hit.extras["citedByCount"] == 9
    assert "pdfUrl" not in hit.extras  # closed access
    assert hit.content.text.split()[:3] == ["Metal-oxide", "layers", "are"]


def test_count_probe_with_ids_only_has_a_total_and_no_hits():
    page = parse(fixture_bytes("openalex", "works-title-abstract-search-count-per-page-1-select-ids.json"))
    assert page.total == 429
    assert page.hits == ()


@pytest.mark.parametrize(
    ("name", "start"),
    [
        (
            "error-400-invalid-filter-field.json",
            "openalex: Invalid query parameters error.: DOESNTEXIST is not a valid field.",
        ),
        (
            "error-400-invalid-select-field.json",
            "openalex: Invalid query parameters error.: DOESNTEXIST is not a valid",
        ),
    ],
)
def test_json_error_bodies_are_soft_errors(name, start):
    page = parse(fixture_bytes("openalex", name))
    assert page.error_message.startswith(start)


def test_404_html_body_is_an_http_error_and_never_json_decoded():
    body = fixture_bytes("openalex", "error-404-work-not-found.html")
    with pytest.raises(ProviderHTTPError) as caught:
        raise_for_status(RawResponse(404, {"content-type": "text/html"}, body), "openalex")
    assert caught.value.status == 404
    with pytest.raises(ParseError, match="not JSON"):
        parse(body)


def test_rebuild_abstract_orders_by_position():
    assert (
        rebuild_abstract({"world": [1], "hello": [0], "again": [3], "hello,": [2]})
        == "hello world hello, again"
    )
    assert rebuild_abstract(None) is None
    assert rebuild_abstract({"x": "not a list"}) is None


@settings(deadline=None)
@given(data=st.data())
def test_broken_bodies_raise_only_parse_error(data):
    survives_broken_json(parse, data, fixture_bytes("openalex", "works-filter-title-search-paperqa.json"))

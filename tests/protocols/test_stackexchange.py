"""Stack Exchange: search answers (gzip or not), quota, `backoff`, throttle violations, key errors."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import InstanceConfig, ParseError, RawResponse, SearchRequest, Secret
from zarniwoop.protocols.stackexchange import MAX_INFLATED, PROTOCOL

from ..support.fuzz_academic import survives_broken_json
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

SEARCH = ("stackexchange", "search-intitle-java-custom-filter-total-body-2018-test-stub.json")
QUESTION = ("stackexchange", "questions-by-id-custom-filter-discourse-onebox-not-search.json")
THROTTLE = ("stackexchange", "error-502-throttle-violation-quoted-in-readme.json")
CONFIG = InstanceConfig("se", "stackexchange", api_key=Secret("se-key"), extras={"site": "superuser"})


def parse(body: bytes, modality: str = "code"):
    return parse_body(PROTOCOL, CONFIG, "java", modality, body)


def test_build_request_with_site_key_and_inclusive_dates():
    request = SearchRequest.create(
        "sigbus", "code", max_results=5, expert_params={"dateFrom": "2018-11-30", "dateTo": "2018-11-30"}
    )
    spec = PROTOCOL.build_request(request, CONFIG)
    assert spec.url == "https://api.stackexchange.com/2.3/search/advanced"
    assert dict(spec.params) == {
        "q": "sigbus",
        "site": "superuser",
        "order": "desc",
        "sort": "relevance",
        "pagesize": "5",
        "filter": "withbody",
        "fromdate": "1543536000",
        "todate": "1543622399",
        "key": "se-key",
    }


def test_questions_with_score_answered_body_and_the_daily_quota():
    page = parse(fixture_bytes(*SEARCH))
    assert page.total == 415810
    first = page.hits[0]
    assert first.title == "A fatal error has been detected by the Java Runtime Environment (SIGBUS (0x7))"
    assert first.url == (
        "https://stackoverflow.com/questions/53554542/"
        "a-fatal-error-has-been-detected-by-the-java-runtime-environment-sigbus-0x7"
    )
    assert first.extras["score"] == 0 and first.extras["answered"] is False
    assert first.extras["createdAt"] == "2018-11-30T09:19:11Z"
    assert first.content.text.startswith("We have written JMH custom bench marking to our test cases")
    assert (page.quota.limit, page.quota.remaining, page.quota.period, page.quota.source) == (
        300,
        296,
        "day",
        "provider",
    )


def test_tags_are_read_and_web_is_served_too():
    [hit] = parse(fixture_bytes(*QUESTION), modality="web").hits
    assert hit.title == "Concept behind these four lines of tricky C code"
    assert hit.extras["tags"] == ["c", "deobfuscation"]
    assert hit.modality.value == "WEB"


def test_a_gzip_body_without_content_encoding_is_inflated():
    page = parse(gzip.compress(fixture_bytes(*SEARCH)))
    assert len(page.hits) == 2


def test_a_gzip_bomb_is_refused():
    with pytest.raises(ParseError, match="exceeds"):
        parse(gzip.compress(b" " * (MAX_INFLATED + 10)))


def test_backoff_is_passed_on():
    body = json.loads(fixture_bytes(*SEARCH))
    body["backoff"] = 10
    assert parse(json.dumps(body).encode()).backoff_seconds == 10.0


def test_throttle_violation_is_a_rate_limit_for_as_long_as_it_says():
    raw = RawResponse(502, {}, fixture_bytes(*THROTTLE))
    assert PROTOCOL.throttled(raw) == 84268.0
    assert (
        PROTOCOL.describe_error(raw)
        == "too many requests from this IP, more requests available in 84268 seconds"
    )
    assert parse(fixture_bytes(*THROTTLE)).error_message.startswith("stackexchange: too many requests")
    other = RawResponse(400, {}, b'{"error_id": 400, "error_name": "bad_parameter", "error_message": "site"}')
    assert PROTOCOL.throttled(other) is None


def test_a_refused_key_is_recognised():
    bad = b'{"error_id": 400, "error_name": "bad_parameter", "error_message": "key is not valid for passed access_token"}'
    assert PROTOCOL.rejects_key(RawResponse(400, {}, bad)) is True
    site = (
        b'{"error_id": 400, "error_name": "bad_parameter", "error_message": "No site found for name `nope`"}'
    )
    assert PROTOCOL.rejects_key(RawResponse(400, {}, site)) is False


@settings(deadline=None)
@given(data=st.data())
def test_broken_bodies_raise_only_parse_error(data):
    real = fixture_bytes(*SEARCH)
    survives_broken_json(parse, data, real, gzip.compress(real))

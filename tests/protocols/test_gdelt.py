"""GDELT DOC 2.0: the article list, plain-text errors with HTTP 200, repaired escapes, no match."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import InstanceConfig, ParseError, SearchRequest
from zarniwoop.protocols.gdelt import PROTOCOL, SLOW_DOWN_PAUSE

from ..support.fuzz_academic import survives_broken_json
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

ARTLIST = ("gdelt", "artlist-vizhinjam-jun-jul-2024-4-articles-reindented.json")
TOO_SHORT = ("gdelt", "error-200-keyword-too-short-plaintext.txt")
CONFIG = InstanceConfig("gdelt", "gdelt")


def parse(body: bytes, **kw):
    return parse_body(
        PROTOCOL, CONFIG, "vizhinjam", "news", body, headers={"content-type": "text/html"}, **kw
    )


def test_build_request_lists_articles_as_json_with_dates_and_domain():
    request = SearchRequest.create(
        "vizhinjam port",
        "news",
        max_results=100,
        expert_params={"dateFrom": "2024-06-01", "dateTo": "2024-07-31", "site": "www.thehindu.com"},
    )
    spec = PROTOCOL.build_request(request, CONFIG)
    assert spec.url == "https://api.gdeltproject.org/api/v2/doc/doc"
    assert dict(spec.params) == {
        "query": "vizhinjam port domain:thehindu.com",
        "mode": "artlist",
        "format": "json",
        "maxrecords": "100",
        "sort": "hybridrel",
        "startdatetime": "20240601000000",
        "enddatetime": "20240731235959",
    }
    assert PROTOCOL.default_rate_per_second == pytest.approx(0.2)


def test_articles_have_outlet_time_language_and_country():
    page = parse(fixture_bytes(*ARTLIST))
    assert [h.url for h in page.hits][:2] == [
        "https://www.thehindu.com/news/national/kerala/customs-grants-approval-to-vizhinjam-international-seaport/article68293772.ece",
        "https://www.mathrubhumi.com/news/kerala/as-trolling-restrictions-removed-vizhinjam-going-for-fresh-start-1.9700465",
    ]
    first = page.hits[0]
    assert first.title == "Customs grants approval to Vizhinjam International Seaport"
    assert first.extras == {
        "publishedAt": "2024-06-15T17:00:00Z",
        "outlet": "thehindu.com",
        "language": "English",
        "sourceCountry": "India",
        "imageUrl": "https://www.thehindu.com/theme/images/og-image.png",
        "mobileUrl": "https://www.thehindu.com/news/national/kerala/"
        "customs-grants-approval-to-vizhinjam-international-seaport/article68293772.ece/amp/",
    }
    assert page.hits[1].extras["language"] == "Malayalam"
    assert "mobileUrl" not in page.hits[1].extras  # `url_mobile` is ""


def test_a_plain_text_error_with_http_200_is_a_soft_error():
    page = parse(fixture_bytes(*TOO_SHORT))
    assert page.error_message == (
        "gdelt: One or more of your keywords were too short, too long or too common: (locationcc:br)"
    )
    assert page.backoff_seconds is None and page.hits == ()


def test_a_slow_down_sentence_benches_the_endpoint():
    page = parse(
        b"Please limit requests to one every 5 seconds or contact kalev.leetaru5@gmail.com for larger queries."
    )
    assert page.error_message.startswith("gdelt: Please limit requests")
    assert page.backoff_seconds == SLOW_DOWN_PAUSE


def test_no_match_invalid_escapes_and_html():
    assert parse(b"{}").hits == ()
    [hit] = parse(
        b'{"articles": [{"url": "https://x.org/a", "title": "It\\\'s here", "domain": "x.org"}]}'
    ).hits
    assert hit.title == "It\\'s here"
    with pytest.raises(ParseError):
        parse(b"<html><body>502 Bad Gateway</body></html>")


@settings(deadline=None)
@given(data=st.data())
def test_broken_bodies_raise_only_parse_error(data):
    survives_broken_json(parse, data, fixture_bytes(*ARTLIST), fixture_bytes(*TOO_SHORT))

"""The helpers the protocol modules share (`_web.py`, `_filters.py`), on values a provider sends."""

from __future__ import annotations

import pytest

from zarniwoop.contract import ParseError
from zarniwoop.contract.protocol import InstanceConfig
from zarniwoop.protocols._filters import page_count
from zarniwoop.protocols._web import endpoint, refusal


@pytest.mark.parametrize(
    ("base_url", "url"),
    [
        (None, "https://api.example.org/search"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/search"),
        ("https://mirror.example.net/api", "https://mirror.example.net/api/search"),
    ],
)
def test_endpoint_is_the_configured_base_else_the_public_one(base_url, url):
    config = InstanceConfig("x", "x", base_url=base_url)
    assert endpoint(config, "https://api.example.org/", "/search") == url


@pytest.mark.parametrize(
    ("total", "per_page", "pages"), [(None, 10, None), (0, 10, 0), (20, 10, 2), (21, 10, 3)]
)
def test_page_count(total, per_page, pages):
    assert page_count(total, per_page) == pages


def test_refusal_reads_the_first_message_along_dotted_keys():
    body = {"detail": {"error": "Query is too long."}, "error": "later"}
    assert (
        refusal(body, "tavily", "results", "detail.error", "error").error_message
        == "tavily: Query is too long."
    )
    assert refusal({"detail": "plain"}, "tavily", "results", "detail.error", "detail").error_message == (
        "tavily: plain"
    )
    with pytest.raises(ParseError, match="tavily: body has no results"):
        refusal({"detail": {}}, "tavily", "results", "detail.error", "detail")
